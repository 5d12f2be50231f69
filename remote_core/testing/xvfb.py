"""A real X server for tests: Xvfb on a free display number, ready before use, torn down after.

Xvfb's ``-displayfd`` does both hard parts: the server picks a free display
number itself and writes it to the pipe only once it accepts connections, so
there is no guessing, no polling and no race with another test run.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Painter", "Xvfb", "xvfb"]

_READY_TIMEOUT = 15.0


@dataclass
class Xvfb:
    """One Xvfb process; ``display`` is ``":N"`` once :meth:`start` returns."""

    width: int = 1280
    height: int = 800
    depth: int = 24
    display: str = ""
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> Xvfb:
        """Start the server and wait until it accepts connections."""
        binary = shutil.which("Xvfb")
        if binary is None:
            raise RuntimeError("Xvfb is not installed (Debian package xvfb)")
        read_end, write_end = os.pipe()
        try:
            self._process = subprocess.Popen(
                [binary, "-displayfd", str(write_end), "-screen", "0",
                 f"{self.width}x{self.height}x{self.depth}", "-nolisten", "tcp",
                 "+extension", "RANDR", "+extension", "DAMAGE", "+extension", "XFIXES",
                 "-noreset"],
                pass_fds=(write_end,), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            )
            os.close(write_end)
            number = self._read_display_number(read_end)
        finally:
            os.close(read_end)
        self.display = f":{number}"
        return self

    def _read_display_number(self, fd: int) -> str:
        text = b""
        while not text.endswith(b"\n"):
            ready, _, _ = select.select([fd], [], [], _READY_TIMEOUT)
            chunk = os.read(fd, 64) if ready else b""
            if not chunk:
                self.stop()
                raise RuntimeError("Xvfb did not become ready")
            text += chunk
        return text.decode().strip()

    def env(self) -> dict[str, str]:
        """The current environment pointed at this display (for child processes)."""
        return {**os.environ, "DISPLAY": self.display}

    def stop(self) -> None:
        """Terminate the server (idempotent)."""
        process, self._process = self._process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


@contextmanager
def xvfb(width: int = 1280, height: int = 800, *, set_display: bool = True) -> Iterator[Xvfb]:
    """Run an Xvfb for the duration of the block; with ``set_display`` also export DISPLAY."""
    server = Xvfb(width, height).start()
    previous = os.environ.get("DISPLAY")
    if set_display:
        os.environ["DISPLAY"] = server.display
    try:
        yield server
    finally:
        if set_display:
            if previous is None:
                os.environ.pop("DISPLAY", None)
            else:
                os.environ["DISPLAY"] = previous
        server.stop()


class Painter:
    """Draws exact pixels straight onto the root window of an X display (tests, benchmarks).

    Drawing on the root window is what a desktop does under its windows, and it
    raises the same DAMAGE reports; colours are ``0xRRGGBB`` on a 24-bit screen.
    """

    def __init__(self, display: str | None = None) -> None:
        from Xlib import display as xdisplay

        self._conn: Any = xdisplay.Display(display)
        screen = self._conn.screen()
        self.root: Any = screen.root
        self.width: int = screen.width_in_pixels
        self.height: int = screen.height_in_pixels
        self._gc: Any = self.root.create_gc(foreground=0, subwindow_mode=1)

    def fill(self, x: int, y: int, width: int, height: int, rgb: int) -> None:
        """Fill a rectangle with one colour."""
        self._gc.change(foreground=rgb)
        self.root.fill_rectangle(self._gc, x, y, width, height)

    def put_bgra(self, x: int, y: int, width: int, height: int, data: bytes) -> None:
        """Put ``width x height`` BGRA pixels (row-major, 4 bytes each) at ``(x, y)``."""
        from Xlib import X

        rows = max(1, 200_000 // (width * 4))  # stay well under the request size limit
        for top in range(0, height, rows):
            count = min(rows, height - top)
            chunk = data[top * width * 4:(top + count) * width * 4]
            self.root.put_image(self._gc, x, y + top, width, count, X.ZPixmap, 24, 0, chunk)

    def scroll(self, x: int, y: int, width: int, height: int, dy: int) -> None:
        """Move a region up by ``dy`` pixels (as a scrolling text view does)."""
        self.root.copy_area(self._gc, self.root, x, y + dy, width, height - dy, x, y)

    def upload(self, image: Any) -> Any:
        """Keep a BGRA image (numpy, ``(h, w, 4)``) on the X server as a pixmap, for fast blits."""
        from Xlib import X

        height, width = image.shape[:2]
        pixmap = self.root.create_pixmap(width, height, 24)
        data = image.tobytes()
        rows = max(1, 200_000 // (width * 4))
        for top in range(0, height, rows):
            count = min(rows, height - top)
            pixmap.put_image(self._gc, 0, top, width, count, X.ZPixmap, 24, 0,
                             data[top * width * 4:(top + count) * width * 4])
        return pixmap

    def blit(self, pixmap: Any, x: int, y: int, width: int, height: int,
             src_x: int = 0, src_y: int = 0) -> None:
        """Copy part of an uploaded pixmap onto the screen (server-side, no pixels sent)."""
        self.root.copy_area(self._gc, pixmap, src_x, src_y, width, height, x, y)

    def sync(self) -> None:
        """Wait until the server has executed everything sent so far."""
        self._conn.sync()

    def close(self) -> None:
        self._conn.close()

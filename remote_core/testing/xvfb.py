"""A real X server for tests: Xvfb on a free display number, ready before use, torn down after.

Xvfb's ``-displayfd`` writes the display number to a pipe only once the server
accepts connections, so there is no polling for readiness; a number another
run holds makes Xvfb exit at once and the next one is tried. Numbers are
never reused within one process: X client libraries (Tk in particular) keep
connections per display name, and a new server behind an old name hangs them.
"""

from __future__ import annotations

import atexit
import itertools
import os
import select
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .processes import stop_process

if TYPE_CHECKING:
    from .codec_contract import Desktop

__all__ = ["Painter", "Xvfb", "blank_painter", "pointer_location", "scroll_page",
           "shared_xvfb", "tk_root", "xvfb"]

_TK_ROOTS: list[Any] = []
_READY_TIMEOUT = 15.0
_ATTEMPTS = 64
_numbers = itertools.count(100 + os.getpid() % 400 * 8)


@dataclass
class Xvfb:
    """One Xvfb process; ``display`` is ``":N"`` once :meth:`start` returns."""

    width: int = 1280
    height: int = 800
    depth: int = 24
    display: str = ""
    extensions_off: tuple[str, ...] = ()
    """Extensions the server goes without (``"MIT-SHM"``: as a display on another machine
    is to its clients)."""
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> Xvfb:
        """Start the server and wait until it accepts connections."""
        binary = shutil.which("Xvfb")
        if binary is None:
            raise RuntimeError("Xvfb is not installed (Debian package xvfb)")
        for _ in range(_ATTEMPTS):
            number = next(_numbers)
            if self._try(binary, number):
                self.display = f":{number}"
                return self
        raise RuntimeError(f"Xvfb did not start on any of {_ATTEMPTS} display numbers")

    def _try(self, binary: str, number: int) -> bool:
        read_end, write_end = os.pipe()
        try:
            self._process = subprocess.Popen(
                [binary, f":{number}", "-displayfd", str(write_end), "-screen", "0",
                 f"{self.width}x{self.height}x{self.depth}", "-nolisten", "tcp",
                 "+extension", "RANDR", "+extension", "DAMAGE", "+extension", "XFIXES",
                 *(arg for name in self.extensions_off for arg in ("-extension", name)),
                 "-noreset"],
                pass_fds=(write_end,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            os.close(write_end)
            write_end = -1
            return self._wait_ready(read_end)
        finally:
            os.close(read_end)
            if write_end >= 0:
                os.close(write_end)

    def _wait_ready(self, fd: int) -> bool:
        """True once the server reports ready; False (server gone) if the number was taken."""
        text = b""
        while not text.endswith(b"\n"):
            ready, _, _ = select.select([fd], [], [], _READY_TIMEOUT)
            chunk = os.read(fd, 64) if ready else b""
            if not chunk:
                self.stop()
                return False
            text += chunk
        return True

    def env(self) -> dict[str, str]:
        """The current environment pointed at this display (for child processes)."""
        return {**os.environ, "DISPLAY": self.display}

    def stop(self) -> None:
        """Terminate the server (idempotent)."""
        process, self._process = self._process, None
        if process is None:
            return
        stop_process(process, 5.0)


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


_shared: dict[tuple[int, int], Xvfb] = {}


def shared_xvfb(width: int = 800, height: int = 600) -> Xvfb:
    """One Xvfb of this size for the whole process, started on first use, stopped at exit;
    DISPLAY points at it.

    Tests that use Tk in their own process need it: Tk keeps its connection to
    a display after the last window closes, and exits the process with an I/O
    error when that server later goes away.
    """
    server = _shared.get((width, height))
    if server is None:
        server = _shared[(width, height)] = Xvfb(width, height).start()
        atexit.register(server.stop)
    os.environ["DISPLAY"] = server.display
    return server


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


@contextmanager
def blank_painter(display: str | None = None) -> Iterator[Painter]:
    """A :class:`Painter` on ``display`` whose screen is black to begin with."""
    painter = Painter(display)
    painter.fill(0, 0, painter.width, painter.height, 0x000000)
    painter.sync()
    try:
        yield painter
    finally:
        painter.close()


def scroll_page(painter: Painter, desktop: Desktop,
                mark: Callable[[Any, int], None] | None = None) -> None:
    """Scroll ``desktop``'s page up a line and show that on the display as a text view
    does: one CopyArea, then the uncovered line drawn. ``mark(line, top)`` may stamp the
    line (a BGRA array) before it is drawn at row ``top`` of the screen; it is called
    just before the first request goes to the X server."""
    from .codec_contract import LINE_H

    x0, y0, x1, _ = desktop.page
    height = desktop._lines * LINE_H
    desktop.scroll(LINE_H)
    top = y0 + height - LINE_H
    line = desktop.image[top:top + LINE_H, x0:x1].copy()
    if mark is not None:
        mark(line, top)
    painter.scroll(x0, y0, x1 - x0, height, LINE_H)
    painter.put_bgra(x0, top, x1 - x0, LINE_H, line.tobytes())


async def pointer_location(env: dict[str, str]) -> tuple[int, int]:
    """Where the X server's pointer is (``xdotool``), on the display ``env`` names."""
    import anyio

    done = await anyio.run_process(["xdotool", "getmouselocation", "--shell"], env=env)
    values = dict(line.split("=", 1) for line in done.stdout.decode().split())
    return int(values["X"]), int(values["Y"])


def tk_root() -> Any:
    """A Tk main window (an X client of the tests' own) on ``$DISPLAY``, kept for the
    process's lifetime: Tcl aborts the process when its interpreter is freed in another
    thread than the one that made it, and the cycles among a window's widgets are
    collected in whichever thread the garbage collector happens to run (a test's
    worker thread). Call ``destroy()`` on it when done."""
    import tkinter

    root = tkinter.Tk()
    _TK_ROOTS.append(root)
    return root

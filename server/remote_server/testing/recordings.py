"""What the session-recording tests share: a picture painted on an X screen and found again
in a recording's frames (:func:`pictures`), and ``remote-support recordings`` run beside a
server process."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from remote_core.codecs import FrameDecoder
from remote_core.protocol import pb
from remote_core.recording import read_segment
from remote_core.testing.xvfb import Painter, Xvfb
from remote_core.video import from_wire

from .processes import BIN, ServerProcess

__all__ = ["paint", "pictures", "recordings_cli", "shows"]

BLOCK = (40, 30, 80, 60)
"""A white block on the painted screen (x, y, width, height), so it is not one colour."""


def paint(display: Xvfb, rgb: int, width: int, height: int) -> None:
    """Fill the screen with ``rgb`` (0xRRGGBB) and the white :data:`BLOCK`."""
    painter = Painter(display.display)
    try:
        painter.fill(0, 0, width, height, rgb)
        painter.fill(*BLOCK, 0xFFFFFF)
        painter.sync()
    finally:
        painter.close()


def shows(image: Any, rgb: int, *, tolerance: int = 0) -> bool:
    """Whether a BGRA image (at least 251x201) shows what :func:`paint` painted, each
    channel within ``tolerance`` (a lossy codec's error)."""
    blue, green, red = rgb & 0xFF, (rgb >> 8) & 0xFF, rgb >> 16
    corner = image[200, 250, :3].astype(int)
    block = image[BLOCK[1] + 30, BLOCK[0] + 40, :3].astype(int)
    return bool(abs(corner - [blue, green, red]).max() <= tolerance
                and abs(block - 255).max() <= tolerance)


def pictures(folder: Path, decoder: FrameDecoder) -> list[tuple[int, str, np.ndarray]]:
    """Each picture a files-store recording's frames show, in order: ``(milliseconds, codec,
    BGRA image)``, decoded as a viewer decodes them (a message that does not parse fails)."""
    shown = []
    for path in sorted(folder.glob("*.seg")):
        for at_ms, data in read_segment(path.read_bytes()).records:
            message = pb.Message()
            message.ParseFromString(data)
            if message.WhichOneof("payload") == "video_frame":
                name, frame = from_wire(message.video_frame)
                image = decoder.decode(name, frame)
                if image is not None:
                    shown.append((at_ms, name, np.asarray(image).copy()))
    return shown


def recordings_cli(server: ServerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    """``remote-support recordings ...`` as an operator runs it beside the server (its
    settings: the same environment)."""
    return subprocess.run([str(BIN / "remote-support"), "recordings", *args], env=server.env,
                          capture_output=True, text=True, timeout=60)

"""PNG files from BGRA images with the standard library alone (screenshots, recordings)."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["write_png"]


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def write_png(path: str | Path, image: Any) -> None:
    """Write a ``(height, width, 4)`` BGRA uint8 image as an opaque RGB PNG."""
    bgra = np.asarray(image)
    if bgra.ndim != 3 or bgra.shape[2] != 4 or bgra.dtype != np.uint8:
        raise ValueError(f"expected a BGRA uint8 image, got {bgra.shape} {bgra.dtype}")
    height, width = bgra.shape[:2]
    rgb = bgra[:, :, 2::-1]
    rows = np.zeros((height, 1 + width * 3), np.uint8)  # filter byte 0 on every row
    rows[:, 1:] = rgb.reshape(height, width * 3)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    Path(path).write_bytes(b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header)
                           + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6))
                           + _chunk(b"IEND", b""))

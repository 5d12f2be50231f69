"""The ``png`` codec's encoder and decoder.

``EncodedFrame.data`` is one or more parts, each a 4-byte big-endian length
and one PNG file (RGB, 8 bits per channel). A keyframe has one part, the
whole display, and no rectangles; an incremental frame has one part per
rectangle in ``EncodedFrame.rects``, in order. ``width`` and ``height`` are
the display's size on every frame. The fourth byte of a screen's pixels is
padding (X11 sends 0), so it is not sent and decodes as opaque (255): kept,
it made a browser draw a transparent, invisible picture.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from PIL import Image

from remote_core.codecs import MAX_PIXELS, MAX_SIDE, KeyframeClock, as_image, profile_for
from remote_core.interfaces import Decoder, Encoder
from remote_core.types import EncodedFrame, EncoderConfig, Moves, Rect

__all__ = ["BAND", "PngDecoder", "PngEncoder", "pack", "unpack"]

Picture = npt.NDArray[np.uint8]

BAND = 64
"""Rows compared at a time: each band with a change becomes one rectangle."""

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_LENGTH = struct.Struct(">I")


def pack(parts: Sequence[bytes]) -> bytes:
    return b"".join(_LENGTH.pack(len(part)) + part for part in parts)


def unpack(data: bytes) -> list[bytes]:
    """The parts of ``data``; ``ValueError`` when the lengths do not add up."""
    parts, pos = [], 0
    while pos < len(data):
        if pos + 4 > len(data):
            raise ValueError("png frame ends inside a part's length")
        (length,) = _LENGTH.unpack_from(data, pos)
        pos += 4
        if length > len(data) - pos:
            raise ValueError(f"png part of {length} bytes overruns the frame")
        parts.append(data[pos:pos + length])
        pos += length
    return parts


def to_png(picture: Picture, level: int) -> bytes:
    """A BGRA picture as an RGB PNG file."""
    h, w = picture.shape[:2]
    image = Image.frombuffer("RGB", (w, h), np.ascontiguousarray(picture), "raw", "BGRX", 0, 1)
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=level)
    return out.getvalue()


def from_png(data: bytes, width: int, height: int) -> Picture:
    """A PNG file of exactly ``width`` x ``height`` as opaque BGRA; its header is checked
    before anything is decompressed, so no part can expand beyond its rectangle."""
    if data[:8] != _SIGNATURE or data[12:16] != b"IHDR" or len(data) < 24:
        raise ValueError("png part is not a PNG file")
    size = struct.unpack(">II", data[16:24])
    if size != (width, height):
        raise ValueError(f"png part is {size[0]}x{size[1]}, expected {width}x{height}")
    try:
        with Image.open(io.BytesIO(data), formats=["PNG"]) as image:
            rgb = np.asarray(image.convert("RGB"), np.uint8)
    except Exception as exc:  # Pillow raises many kinds; a decoder raises ValueError only
        raise ValueError(f"png part does not decode: {exc}") from None
    out = np.full((height, width, 4), 255, np.uint8)
    out[..., :3] = rgb[..., ::-1]
    return out


def changed_rects(previous: Picture, current: Picture) -> list[Rect]:
    """One rectangle per band of :data:`BAND` rows that changed, as wide as the change."""
    h = current.shape[0]
    rects = []
    for y in range(0, h, BAND):
        band = (previous[y:y + BAND] != current[y:y + BAND]).any(axis=2)
        columns = np.flatnonzero(band.any(axis=0))
        if columns.size:
            x0, x1 = int(columns[0]), int(columns[-1]) + 1
            rects.append(Rect(x0, y, x1 - x0, min(BAND, h - y)))
    return rects


def clip(rects: Sequence[Rect], width: int, height: int) -> list[Rect]:
    out = []
    for r in rects:
        x0, y0 = max(0, r.x), max(0, r.y)
        x1, y1 = min(width, r.x + r.width), min(height, r.y + r.height)
        if x1 > x0 and y1 > y0:
            out.append(Rect(x0, y0, x1 - x0, y1 - y0))
    return out


class PngEncoder(Encoder):
    """A whole PNG first, on request, on a size change and every 10 s; the changed
    rectangles' PNGs otherwise; nothing when nothing changed."""

    def __init__(self, config: EncoderConfig) -> None:
        self._level = 6 if profile_for(config.preset).zstd_level >= 6 else 1  # low bandwidth
        self._clock = KeyframeClock()
        self._previous: Picture | None = None

    def encode(self, image: Any, *, keyframe: bool = False,
               dirty: Sequence[Rect] | None = None,
               moves: Moves | None = None) -> EncodedFrame | None:
        current = np.asarray(as_image(image))
        h, w = current.shape[:2]
        previous = self._previous
        if keyframe or previous is None or previous.shape != current.shape or self._clock.due():
            self._clock.sent()
            self._previous = current.copy()
            return EncodedFrame(pack([to_png(current, self._level)]), keyframe=True,
                                width=w, height=h)
        rects = clip(dirty, w, h) if dirty is not None else changed_rects(previous, current)
        if not rects:
            return None
        parts = [to_png(current[r.y:r.y + r.height, r.x:r.x + r.width], self._level)
                 for r in rects]
        np.copyto(previous, current)
        return EncodedFrame(pack(parts), width=w, height=h, rects=tuple(rects))


class PngDecoder(Decoder):
    """Keeps the picture; a keyframe replaces it, an incremental frame patches it."""

    def __init__(self) -> None:
        self._picture: Picture | None = None

    def decode(self, frame: EncodedFrame) -> Picture | None:
        w, h = frame.width, frame.height
        if not (1 <= w <= MAX_SIDE and 1 <= h <= MAX_SIDE and w * h <= MAX_PIXELS):
            raise ValueError(f"png frame size {w}x{h} is out of range")
        parts = unpack(frame.data)
        if frame.keyframe:
            if frame.rects or len(parts) != 1:
                raise ValueError("a png keyframe is one picture and no rectangles")
            self._picture = from_png(parts[0], w, h)
            return self._picture.copy()
        picture = self._picture
        if picture is None or picture.shape[:2] != (h, w):
            return None  # an incremental frame needs the keyframe it builds on
        if not frame.rects or len(parts) != len(frame.rects):
            raise ValueError(f"png frame has {len(parts)} pictures for "
                             f"{len(frame.rects)} rectangles")
        for r in frame.rects:
            if r.width < 1 or r.height < 1 or r.x < 0 or r.y < 0 or r.x + r.width > w \
                    or r.y + r.height > h:
                raise ValueError(f"rectangle {r.width}x{r.height}+{r.x}+{r.y} is outside "
                                 f"the {w}x{h} display")
        pieces = [from_png(part, r.width, r.height)
                  for part, r in zip(parts, frame.rects, strict=True)]
        for r, piece in zip(frame.rects, pieces, strict=True):
            picture[r.y:r.y + r.height, r.x:r.x + r.width] = piece
        return picture.copy()

"""Applies raw frames to a framebuffer, refusing anything that does not add up."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import zstandard

from remote_core.codecs import MAX_PIXELS, MAX_SIDE
from remote_core.interfaces import Decoder
from remote_core.types import EncodedFrame

__all__ = ["RawZstdDecoder"]

_READ_SIZE = 1 << 20  # compressed bytes fed per step; larger steps decompress faster


class RawZstdDecoder(Decoder):
    """Keeps the framebuffer; a keyframe replaces it, an incremental frame patches it.

    Sizes are checked before anything is decompressed, and decompression stops
    at the size the header promises, so a small message cannot expand into a
    large allocation (no decompression bomb).
    """

    def __init__(self) -> None:
        self._decompressor = zstandard.ZstdDecompressor()
        self._framebuffer: npt.NDArray[np.uint8] | None = None

    def decode(self, frame: EncodedFrame) -> npt.NDArray[np.uint8] | None:
        w, h = frame.width, frame.height
        if not (1 <= w <= MAX_SIDE and 1 <= h <= MAX_SIDE and w * h <= MAX_PIXELS):
            raise ValueError(f"frame size {w}x{h} is outside 1..{MAX_SIDE} per side "
                             f"and {MAX_PIXELS} pixels")
        if frame.keyframe:
            if frame.rects:
                raise ValueError("a raw keyframe must not carry dirty rectangles")
            image = np.empty((h, w, 4), np.uint8)
            self._fill(frame, image.data.cast("B"))
            self._framebuffer = image
            return image.copy()
        framebuffer = self._framebuffer
        if framebuffer is None or framebuffer.shape[:2] != (h, w):
            return None  # an incremental frame needs the keyframe it builds on
        rects = [(r.x, r.y, r.width, r.height) for r in frame.rects]
        if not rects:
            raise ValueError("an incremental raw frame must carry dirty rectangles")
        for x, y, rw, rh in rects:
            if rw < 1 or rh < 1 or x < 0 or y < 0 or x + rw > w or y + rh > h:
                raise ValueError(f"dirty rectangle {rw}x{rh}+{x}+{y} is outside the {w}x{h} frame")
        area = sum(rw * rh for _, _, rw, rh in rects)
        if area > w * h:
            raise ValueError(f"dirty rectangles cover {area} pixels, more than the frame's {w * h}")
        payload = np.empty(area * 4, np.uint8)
        self._fill(frame, payload.data)
        offset = 0
        for x, y, rw, rh in rects:
            size = rw * rh * 4
            framebuffer[y:y + rh, x:x + rw] = payload[offset:offset + size].reshape(rh, rw, 4)
            offset += size
        return framebuffer.copy()

    def _fill(self, frame: EncodedFrame, out: memoryview) -> None:
        """Decompress (or copy) ``frame.data`` into ``out``, which it must fill exactly."""
        expected = len(out)
        if not frame.compressed:
            if len(frame.data) != expected:
                raise ValueError(f"raw payload is {len(frame.data)} bytes, expected {expected}")
            out[:] = frame.data
            return
        try:
            declared = zstandard.frame_content_size(frame.data)
        except zstandard.ZstdError as exc:
            raise ValueError(f"raw payload is not a Zstandard frame: {exc}") from None
        if declared not in (-1, expected):
            raise ValueError(f"Zstandard frame declares {declared} bytes, expected {expected}")
        filled = 0
        try:
            with self._decompressor.stream_reader(frame.data, read_size=_READ_SIZE) as reader:
                while filled < expected:
                    n = reader.readinto(out[filled:])
                    if not n:
                        break
                    filled += n
                extra = reader.read(1)
        except zstandard.ZstdError as exc:
            raise ValueError(f"raw payload does not decompress: {exc}") from None
        if filled != expected or extra:
            raise ValueError(
                f"raw payload decompresses to {'more than ' if extra else ''}"
                f"{filled} bytes, expected {expected}"
            )

"""Applies raw frames to a framebuffer, refusing anything that does not add up."""

from __future__ import annotations

from typing import Any

import zstandard

from remote_core.codecs import MAX_PIXELS, MAX_SIDE
from remote_core.interfaces import Decoder
from remote_core.types import EncodedFrame

from .pixels import move_rect, put_rect

__all__ = ["RawZstdDecoder"]

_READ_SIZE = 1 << 20  # compressed bytes fed per step; larger steps decompress faster

MAX_COPIES = 64
"""Most moves one frame may carry (the encoder sends one): bounds a frame's work."""


class RawZstdDecoder(Decoder):
    """Keeps the framebuffer; a keyframe replaces it (a keyframe part, ``rows``, only its
    rows, where a picture of its size is kept: ``raw_keep``), an incremental frame moves
    parts of it (``copies``, in order) and then patches it.

    Sizes are checked before anything is decompressed, and decompression stops
    at the size the header promises, so a small message cannot expand into a
    large allocation (no decompression bomb).
    """

    def __init__(self) -> None:
        self._decompressor = zstandard.ZstdDecompressor()
        self._framebuffer = bytearray()
        self._size: tuple[int, int] | None = None  # the framebuffer's width and height

    def begin_from(self, image: Any) -> None:
        """Another codec's last picture: incremental frames drawn over it (``raw_over``)
        build on it until a keyframe."""
        picture = memoryview(image)
        shape = picture.shape or ()
        if len(shape) != 3 or shape[2] != 4:
            return
        self._framebuffer, self._size = bytearray(picture.tobytes()), (shape[1], shape[0])

    def decode(self, frame: EncodedFrame) -> memoryview | None:
        """The whole picture after ``frame``, as a ``(height, width, 4)`` view of a copy."""
        w, h = frame.width, frame.height
        if not (1 <= w <= MAX_SIDE and 1 <= h <= MAX_SIDE and w * h <= MAX_PIXELS):
            raise ValueError(f"frame size {w}x{h} is outside 1..{MAX_SIDE} per side "
                             f"and {MAX_PIXELS} pixels")
        if frame.keyframe:
            if frame.rects or frame.copies:
                raise ValueError("a raw keyframe must not carry dirty rectangles or copies")
            if not 0 <= frame.rows <= h:
                raise ValueError(f"a keyframe part of {frame.rows} rows in a {w}x{h} frame")
            image = bytearray(w * h * 4)
            self._fill(frame, memoryview(image))
            if frame.rows and self._size == (w, h):  # a part: the picture below stays
                self._framebuffer[:frame.rows * w * 4] = memoryview(image)[:frame.rows * w * 4]
            else:
                self._framebuffer, self._size = image, (w, h)
            return _picture(self._framebuffer, w, h)
        if self._size != (w, h):
            return None  # an incremental frame needs the keyframe it builds on
        if not frame.rects and not frame.copies:
            raise ValueError("an incremental raw frame must carry dirty rectangles or copies")
        if len(frame.copies) > MAX_COPIES:
            raise ValueError(f"a raw frame carries {len(frame.copies)} copies; at most "
                             f"{MAX_COPIES} are accepted")
        for what, r in [*(("dirty rectangle", r) for r in frame.rects),
                        *(("copy target", c.target) for c in frame.copies),
                        *(("copy source", c.source) for c in frame.copies)]:
            if r.width < 1 or r.height < 1 or r.x < 0 or r.y < 0 or r.x + r.width > w \
                    or r.y + r.height > h:
                raise ValueError(f"{what} {r.width}x{r.height}+{r.x}+{r.y} is outside "
                                 f"the {w}x{h} frame")
        area = sum(r.width * r.height for r in frame.rects)
        if area > w * h:
            raise ValueError(f"dirty rectangles cover {area} pixels, more than the frame's {w * h}")
        payload = bytearray(area * 4)
        self._fill(frame, memoryview(payload))
        for c in frame.copies:
            move_rect(self._framebuffer, w, c)
        offset = 0
        for r in frame.rects:
            offset = put_rect(self._framebuffer, w, r, payload, offset)
        return _picture(self._framebuffer, w, h)

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


def _picture(framebuffer: bytearray, width: int, height: int) -> memoryview:
    """A copy of the framebuffer, shaped as an image; the next frame may change the original."""
    return memoryview(bytes(framebuffer)).cast("B", (height, width, 4))

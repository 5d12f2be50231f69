"""Raw BGRA frames, Zstandard-compressed, sending only what changed (CONTRACT 1, "Raw frames")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import zstandard

from remote_core.codecs import KeyframeClock, as_image, zstd_level
from remote_core.interfaces import Encoder
from remote_core.types import EncodedFrame, EncoderConfig, Rect

from .dirty import clip_rects, find_dirty
from .parts import MESSAGE_LIMIT, PART_BYTES, PLACEHOLDER, fits, keyframe_part, pack_rects, rotate

__all__ = ["FULL_FRAME_SHARE", "RawZstdEncoder"]

FULL_FRAME_SHARE = 0.6
"""When this share of the frame changed, a whole frame is cheaper than gathering rectangles."""


class RawZstdEncoder(Encoder):
    """Keeps the picture the viewers have and sends the dirty rectangles against it.

    A whole frame (``is_keyframe``) goes out first, on request, on a size
    change, when most of the screen changed, and at least every 10 s. A frame
    that would not fit one message under ``message_limit`` goes in parts
    (:mod:`.parts`); :attr:`pending` then stays true until the rest is sent.

    :param message_limit: the largest message (the shipped 16 MiB cap).
    :param part_bytes: the largest part of a frame that does not fit.
    """

    def __init__(self, config: EncoderConfig, clock: KeyframeClock | None = None, *,
                 message_limit: int = MESSAGE_LIMIT, part_bytes: int = PART_BYTES) -> None:
        self._compressor = zstandard.ZstdCompressor(level=zstd_level(config.preset))
        self._previous: npt.NDArray[np.uint8] | None = None  # what the viewers have
        self._clock = clock or KeyframeClock()
        self._limit = message_limit
        self._part_bytes = part_bytes
        self._owing = False
        self._next_y = 0  # where the next part starts, so parts sweep the screen

    @property
    def pending(self) -> bool:
        """True while the viewers lack part of the last picture (it came in parts)."""
        return self._owing

    def encode(self, image: Any, *, keyframe: bool = False,
               dirty: Sequence[Rect] | None = None) -> EncodedFrame | None:
        current = as_image(image)
        h, w = current.shape[:2]
        previous = self._previous
        full = keyframe or previous is None or previous.shape != current.shape or self._clock.due()
        if not full:
            assert previous is not None
            # While parts are owed, only a comparison knows everything the viewers lack.
            rects = (clip_rects(dirty, w, h) if dirty is not None and not self._owing
                     else find_dirty(previous, current))
            if not rects:
                self._owing = False
                return None
            full = (not self._owing
                    and sum(r.width * r.height for r in rects) >= FULL_FRAME_SHARE * w * h)
            if not full:
                return self._delta(current, previous, rects)
        return self._keyframe(current)

    def _keyframe(self, current: npt.NDArray[np.uint8]) -> EncodedFrame:
        h, w = current.shape[:2]
        self._clock.sent()
        whole = self._squeeze(current, 0)
        if whole is not None:
            self._remember(current, rows=h)
            self._owing = False
            return _frame(w, h, *whole, keyframe=True, rects=[])
        data, rows = keyframe_part(current, self._compressor, self._part_bytes)
        self._remember(current, rows=rows)
        self._owing, self._next_y = True, rows
        return _frame(w, h, data, True, keyframe=True, rects=[])

    def _delta(self, current: npt.NDArray[np.uint8], previous: npt.NDArray[np.uint8],
               rects: list[Rect]) -> EncodedFrame:
        h, w = current.shape[:2]
        if not self._owing:  # the rest of a picture in parts goes in parts too
            parts = [current[r.y:r.y + r.height, r.x:r.x + r.width] for r in rects]
            payload = np.concatenate([p.reshape(-1) for p in parts])
            whole = self._squeeze(payload, len(rects))
            if whole is not None:
                for r, part in zip(rects, parts, strict=True):
                    previous[r.y:r.y + r.height, r.x:r.x + r.width] = part
                self._owing = False
                return _frame(w, h, *whole, keyframe=False, rects=rects)
        packed = pack_rects(current, rotate(rects, self._next_y), self._compressor,
                            self._part_bytes)
        for r in packed.rects:
            previous[r.y:r.y + r.height, r.x:r.x + r.width] = \
                current[r.y:r.y + r.height, r.x:r.x + r.width]
        self._owing = bool(packed.rest)
        self._next_y = packed.rest[0].y if packed.rest else 0
        return _frame(w, h, packed.data, packed.compressed, keyframe=False, rects=packed.rects)

    def _squeeze(self, payload: npt.NDArray[np.uint8],
                 rect_count: int) -> tuple[bytes, bool] | None:
        """``(data, compressed)``: the payload compressed, or as it is when that is no
        smaller; ``None`` when that does not fit one message."""
        data = self._compressor.compress(payload.data)
        if len(data) < payload.nbytes:
            return (data, True) if fits(len(data), rect_count, self._limit) else None
        if not fits(payload.nbytes, rect_count, self._limit):
            return None
        return payload.tobytes(), False

    def _remember(self, current: npt.NDArray[np.uint8], rows: int) -> None:
        """The viewers now have ``current``'s first ``rows`` rows and placeholder below."""
        previous = self._previous
        if previous is None or previous.shape != current.shape:
            previous = self._previous = np.empty_like(current)
        np.copyto(previous[:rows], current[:rows])  # reuse the buffer: no 8 MB per frame
        previous[rows:] = PLACEHOLDER


def _frame(w: int, h: int, data: bytes, compressed: bool, *, keyframe: bool,
           rects: list[Rect]) -> EncodedFrame:
    return EncodedFrame(data=data, keyframe=keyframe, width=w, height=h, rects=tuple(rects),
                        compressed=compressed)

"""Raw BGRA frames, Zstandard-compressed, sending only what changed (CONTRACT 1, "Raw frames")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import zstandard

from remote_core.codecs import KeyframeClock, as_image, zstd_level
from remote_core.interfaces import Encoder
from remote_core.protocol import pb
from remote_core.types import EncoderConfig, Rect

from .dirty import clip_rects, find_dirty

__all__ = ["FULL_FRAME_SHARE", "RawZstdEncoder"]

FULL_FRAME_SHARE = 0.6
"""When this share of the frame changed, a whole frame is cheaper than gathering rectangles."""


class RawZstdEncoder(Encoder):
    """Keeps the last frame sent and sends the dirty rectangles against it.

    A whole frame (``is_keyframe``) goes out first, on request, on a size
    change, when most of the screen changed, and at least every 10 s.
    """

    def __init__(self, config: EncoderConfig, clock: KeyframeClock | None = None) -> None:
        self._compressor = zstandard.ZstdCompressor(level=zstd_level(config.preset))
        self._previous: npt.NDArray[np.uint8] | None = None
        self._clock = clock or KeyframeClock()

    def encode(self, image: Any, *, keyframe: bool = False,
               dirty: Sequence[Rect] | None = None) -> Any:
        current = as_image(image)
        h, w = current.shape[:2]
        previous = self._previous
        full = keyframe or previous is None or previous.shape != current.shape or self._clock.due()
        rects: list[Rect] = []
        if not full:
            assert previous is not None
            rects = (clip_rects(dirty, w, h) if dirty is not None
                     else find_dirty(previous, current))
            if not rects:
                return None
            full = sum(r.width * r.height for r in rects) >= FULL_FRAME_SHARE * w * h
        if full:
            payload: npt.NDArray[np.uint8] = current
            if previous is None or previous.shape != current.shape:
                self._previous = current.copy()
            else:
                np.copyto(previous, current)  # reuse the buffer: no 8 MB allocation per frame
            self._clock.sent()
            rects = []
        else:
            assert previous is not None
            parts = [current[r.y:r.y + r.height, r.x:r.x + r.width] for r in rects]
            payload = np.concatenate([p.reshape(-1) for p in parts])
            for r, part in zip(rects, parts, strict=True):
                previous[r.y:r.y + r.height, r.x:r.x + r.width] = part
        data = self._compressor.compress(payload)
        compressed = len(data) < payload.nbytes
        return pb.VideoFrame(raw=pb.RawFrame(
            width=w, height=h, data=data if compressed else payload.tobytes(),
            compressed=compressed, is_keyframe=full,
            dirty_rects=[pb.DirtyRect(x=r.x, y=r.y, width=r.width, height=r.height)
                         for r in rects],
        ))

"""The automatic codec: lossless for what a desktop does most, video while the screen moves.

Typing, a menu, a cursor blink change a few thousand pixels: sent lossless and at
once they cost a few kilobytes and look exact. Scrolling, a video, a dragged
window change most of the screen every frame: a lossless picture of them is
megabytes, where a video codec sends tens of kilobytes. ``bench/browser.py``
measured both in the browser: raw frames win typing, H.264 wins scrolling and
full-screen change by several times. So the stream follows the content: a few
frames in a row that each change a large share of the screen switch it to the
video codec; a calm spell switches it back to lossless, whose keyframe then
restores the exact picture. No I/O here: the streamer feeds each frame's changed
share and asks which way to go.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from remote_core.types import Rect

__all__ = ["ContentSwitch", "changed_share"]


def changed_share(rects: Sequence[Rect] | None, width: int, height: int) -> float | None:
    """The share of a ``width`` x ``height`` screen that ``rects`` cover (overlaps counted
    twice, capped at 1); ``None`` when the capture does not know what changed."""
    if rects is None:
        return None
    area = sum(r.width * r.height for r in rects)
    return min(1.0, area / max(1, width * height))


@dataclass
class ContentSwitch:
    """Whether the next frames should go out in the video codec.

    :param motion_share: a frame that changes at least this share of the screen is motion.
    :param enter_frames: this many motion frames in a row switch to video.
    :param calm_seconds: this long without a motion frame switches back to lossless.
    """

    motion_share: float = 0.10
    enter_frames: int = 2
    calm_seconds: float = 1.0
    motion: bool = False
    _streak: int = 0
    _last_motion: float = -math.inf

    def observe(self, share: float | None, now: float) -> bool:
        """Feed one frame's changed share (``None``: unknown, which changes nothing);
        return whether the stream should now be in the video codec."""
        if share is None:
            return self.motion
        if share >= self.motion_share:
            self._streak += 1
            self._last_motion = now
            if self._streak >= self.enter_frames:
                self.motion = True
        else:
            self._streak = 0
            if self.motion and now - self._last_motion >= self.calm_seconds:
                self.motion = False
        return self.motion

    def tick(self, now: float) -> bool:
        """No frame was made (the screen is still): the calm spell goes on all the same."""
        if self.motion and now - self._last_motion >= self.calm_seconds:
            self.motion = False
            self._streak = 0
        return self.motion

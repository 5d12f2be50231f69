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

The streamer also tells it when a lossless frame was too big for the link and
went out as video (:meth:`ContentSwitch.lossless_too_costly`): that counts as
motion, and each time it happens the calm spell before the next try doubles
(up to :data:`MAX_CALM_SECONDS`), so a still picture that is costly in lossless
(a paused video) is not encoded in vain every second.

While the screen moves, :class:`MotionSize` watches how long each video frame takes to
make (grab, convert, encode): when that is most of a frame's time, the machine is short
of CPU and every frame waits behind the last, so the motion goes on at half the
display's width and height (a quarter of the pixels to convert, encode and decode;
``Encoder.downscale``) until it ends. The exact picture comes back with the lossless
one, as after any motion. A lossy codec the viewers chose follows the same rule
(:class:`ChosenSize`), its full-size picture back in a keyframe once the screen is calm.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from remote_core.types import Rect

__all__ = ["MAX_CALM_SECONDS", "ChosenSize", "ContentSwitch", "MotionSize", "changed_share"]

MAX_CALM_SECONDS = 16.0
"""Longest calm spell asked for before lossless is tried again after it proved costly."""


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
    _calm: float | None = None
    """The calm spell in force: :attr:`calm_seconds`, or more after costly tries."""
    _returning: bool = False
    """Motion just ended and no lossless frame has gone out since."""

    @property
    def _calm_for(self) -> float:
        return self.calm_seconds if self._calm is None else self._calm

    def observe(self, share: float | None, now: float) -> bool:
        """Feed one frame's changed share (``None``: unknown, which changes nothing);
        return whether the stream should now be in the video codec."""
        if share is None:
            return self.motion
        if not self.motion:  # a lossless frame went out: its cost was fine
            self._returning, self._calm = False, None
        if share >= self.motion_share:
            self._streak += 1
            self._last_motion = now
            if self._streak >= self.enter_frames:
                self.motion = True
        else:
            self._streak = 0
            if self.motion and now - self._last_motion >= self._calm_for:
                self._end_motion()
        return self.motion

    def tick(self, now: float) -> bool:
        """No frame was made (the screen is still): the calm spell goes on all the same."""
        if self.motion and now - self._last_motion >= self._calm_for:
            self._end_motion()
        return self.motion

    def motion_from(self) -> float | None:
        """The changed share from which the next frame would make motion (the big changes
        before it already count), so it can go out in video at once rather than be the
        last lossless frame of the motion; ``None`` when the next frame cannot (in motion
        already, or no big change before it)."""
        if self.motion or self._streak + 1 < self.enter_frames:
            return None
        return self.motion_share

    def calm_left(self, now: float) -> float | None:
        """Seconds until a still screen ends the motion (``None``: no motion to end), so
        a loop waiting for changes wakes in time to restore the lossless picture."""
        if not self.motion:
            return None
        return max(0.0, self._last_motion + self._calm_for - now)

    def _end_motion(self) -> None:
        self.motion, self._streak, self._returning = False, 0, True

    def lossless_too_costly(self, now: float) -> None:
        """A lossless frame was too big for the link and went out as video: the stream is
        in video from here, and the next try at lossless waits twice as long as the last."""
        if self._returning:  # the picture restored after motion was too costly
            self._calm = min(MAX_CALM_SECONDS, 2 * self._calm_for)
        else:  # a large change while lossless: the usual wait
            self._calm = None
        self.motion, self._returning, self._last_motion = True, False, now


@dataclass
class MotionSize:
    """Whether a motion should go on at a smaller size: once :attr:`frames` video frames
    in a row each took at least :attr:`busy_share` of their frame time to make.

    Once a motion, so its picture does not change size back and forth; the next motion
    begins at full size again (:meth:`begin`), unless it begins within :attr:`remember`
    seconds of one that went on smaller.
    """

    busy_share: float = 0.75
    frames: int = 5
    factor: int = 2
    """The motion's width and height are divided by it."""
    remember: float = 10.0
    """Seconds after the last frame of a motion that went on smaller in which the next
    one begins smaller: a machine short of CPU a moment ago still is, and at full size
    the motion would first wait out :attr:`frames` slow frames again (VP9's at 1080p on
    this machine's two cores: half a second, at each video resumed after a pause)."""
    _streak: int = 0
    _asked: bool = False
    _small_until: float = -math.inf

    def begin(self, now: float) -> int:
        """A motion begins at ``now``: the factor it begins at (1: full size)."""
        self._streak, self._asked = 0, now < self._small_until
        return self.factor if self._asked else 1

    def made(self, seconds: float, interval: float, now: float) -> int | None:
        """A video frame took ``seconds`` to make, of a frame time of ``interval``, and
        was done at ``now``: the factor to downscale by from now on, or ``None`` to go on
        as it is."""
        if self._asked:
            self._small_until = now + self.remember
            return None
        self._streak = self._streak + 1 if seconds >= self.busy_share * interval else 0
        if self._streak < self.frames:
            return None
        self._asked, self._small_until = True, now + self.remember
        return self.factor


@dataclass
class ChosenSize:
    """The size a lossy codec the viewers chose goes on at: the automatic choice's rule for
    its motion codec (:class:`MotionSize`), applied to the motions :class:`ContentSwitch`
    finds in the chosen codec's frames. Smaller while a motion's frames take most of their
    time to make (VP9 at 1080p on two cores: 21 frames a second of 30), and at full size
    again once the screen is calm, so a still screen is not left blurred; typing (small
    changes) is no motion and changes no size.

    :meth:`made` and :meth:`tick` return the factor to code at from the next frame (1:
    full size), or ``None`` to go on as it is."""

    switch: ContentSwitch = field(default_factory=ContentSwitch)
    size: MotionSize = field(default_factory=MotionSize)

    def made(self, share: float | None, seconds: float, interval: float,
             now: float) -> int | None:
        """A frame that changed ``share`` of the screen took ``seconds`` to make, of a
        frame time of ``interval``, and was done at ``now``."""
        moving = self.switch.motion
        if self.switch.observe(share, now) != moving:  # a motion begins, or calm ends it
            return 1 if moving else self.size.begin(now)
        return self.size.made(seconds, interval, now) if moving else None

    def tick(self, now: float) -> int | None:
        """No frame was made at ``now``: the calm that ends a motion goes on all the same."""
        return 1 if self.switch.motion and not self.switch.tick(now) else None

    def calm_left(self, now: float) -> float | None:
        """Seconds until a still screen ends the motion (``None``: no motion to end)."""
        return self.switch.calm_left(now)

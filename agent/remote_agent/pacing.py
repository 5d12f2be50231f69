"""Frame pacing: a token bucket, so a change is sent at once and only the rate is capped.

A fixed interval after each frame would make a change that arrives just
before the interval ends wait for it, adding up to a whole frame time of
latency at exactly the rates that matter (typing at 30 changes per second on
a 30 fps stream). The bucket refills at ``fps`` and holds ``burst`` frames
(a fifth of a second's worth by default): the average rate stays at ``fps``
while each change goes out when it happens, jitter included.

The cap is on work, so a frame is charged for what it is: a whole picture (a
keyframe, a video frame, a large change) one token, a small lossless change
(under :data:`SMALL_SHARE` of the screen: a typed word, the line a scroll
uncovers) :data:`SMALL_COST`. A change that reaches the screen in two steps (a
scroll's copy, then its new line) is then two small frames at once, not one
frame and a wait for the bucket.
"""

from __future__ import annotations

__all__ = ["SMALL_COST", "SMALL_SHARE", "Pacer"]

SMALL_SHARE = 0.10
"""A lossless frame that changed less of the screen than this is a small one."""

SMALL_COST = 0.25
"""What a small frame costs, in frames."""


class Pacer:
    """No I/O; times are monotonic seconds."""

    def __init__(self, fps: float, burst: float | None = None) -> None:
        if burst is None:
            burst = max(2.0, fps / 5)
        if fps <= 0 or burst < 1:
            raise ValueError(f"need fps > 0 and burst >= 1, got fps={fps}, burst={burst}")
        self.fps = fps
        self.burst = burst
        self._tokens = burst
        self._at: float | None = None

    def _refill(self, now: float) -> None:
        if self._at is not None:
            self._tokens = min(self.burst, self._tokens + (now - self._at) * self.fps)
        self._at = now

    def wait_time(self, now: float) -> float:
        """Seconds until a frame may be sent (0 when one may go now)."""
        self._refill(now)
        return 0.0 if self._tokens >= 1 else (1 - self._tokens) / self.fps

    def sent(self, now: float, small: bool = False) -> None:
        """A frame went out at ``now``; ``small``: a small lossless change, which costs
        :data:`SMALL_COST` of a frame."""
        self._refill(now)
        self._tokens -= SMALL_COST if small else 1

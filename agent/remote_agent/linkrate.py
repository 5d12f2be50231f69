"""How fast the way to the viewers is, from the frames they acknowledge.

A lossless picture of a moving screen is megabytes: over a 2 Mbit/s link one
such frame holds the picture for seconds, and typing waits behind it. The
streamer therefore needs the link's rate, and the acknowledgements it already
gets tell it how long the link took to carry each frame:

- a frame sent onto an idle link: from when it was sent until its
  acknowledgement, less one round trip;
- large frames sent one behind the other: from the first one's start until the
  last one's acknowledgement (both acknowledgements took the same way back, so
  no round trip is left to take off). Timed one by one from the acknowledgement
  before each, they looked several times faster than the link whenever two
  acknowledgements came in close together (the agent read them late), so such a
  run is a sample only once it has lasted a round trip.

The round trip is the shortest a frame has taken from sending to acknowledgement
lately (small frames, which do not wait behind others, give it). Small frames say
little about the rate, so only frames of :data:`MIN_SAMPLE_BYTES` and up are
samples; the estimate is the best sample of the last few seconds, like BBR's
bottleneck bandwidth filter, and the last one known when none is that recent.
No I/O here.
"""

from __future__ import annotations

from collections import deque

__all__ = ["MIN_SAMPLE_BYTES", "DeliveryRate"]

MIN_SAMPLE_BYTES = 32 * 1024
"""Smaller frames are not samples: their delivery time is mostly the round trip."""

_KEPT = 1024
"""Most frames, samples and round trips remembered: a viewer that never acknowledges (SPEC
does not oblige it to) must not make the lists grow for as long as the stream runs."""


class DeliveryRate:
    """Times are monotonic seconds; sequences are the ``VideoFrame.sequence`` values."""

    def __init__(self, window: float = 5.0) -> None:
        self.window = window
        # (sequence, bytes, sent at); (at, bytes per second); (at, seconds)
        self._in_flight: deque[tuple[int, int, float]] = deque(maxlen=_KEPT)
        self._samples: deque[tuple[float, float]] = deque(maxlen=_KEPT)
        self._round_trips: deque[tuple[float, float]] = deque(maxlen=_KEPT)
        self._last_ack = 0.0
        self._latest: float | None = None
        self._run: tuple[float, float, int] | None = None
        """Large frames delivered one behind the other: when the first one's delivery
        began, the round trip its time includes, and their bytes so far."""

    def sent(self, sequence: int, size: int, now: float) -> None:
        self._in_flight.append((sequence, size, now))

    def acked(self, sequence: int, now: float) -> None:
        """Viewers acknowledged ``sequence``, and so every frame before it."""
        while self._in_flight and self._in_flight[0][0] <= sequence:
            _, size, sent_at = self._in_flight.popleft()
            queued = sent_at < self._last_ack  # behind the frame acknowledged before it
            if size < MIN_SAMPLE_BYTES:
                self._round_trip(now - sent_at, now)
                self._run = None
            else:
                round_trip = self.round_trip(now)
                if not queued:
                    self._run = (sent_at, round_trip, 0)
                elif self._run is None:
                    self._run = (self._last_ack, 0.0, 0)
                began, less, carried = self._run
                self._run = began, less, carried + size
                span = now - began
                if span > 0 and (not queued or span >= round_trip):
                    # Never faster than the round trip allows being told apart from it.
                    rate = (carried + size) / max(span - less, span / 10)
                    self._samples.append((now, rate))
                    self._latest = rate
            self._last_ack = now

    def _round_trip(self, seconds: float, now: float) -> None:
        while self._round_trips and self._round_trips[-1][1] >= seconds:
            self._round_trips.pop()  # a later, shorter one makes it moot
        self._round_trips.append((now, seconds))

    def round_trip(self, now: float) -> float:
        """The shortest time a small frame took to be acknowledged lately (0: none yet)."""
        while self._round_trips and now - self._round_trips[0][0] > 2 * self.window:
            self._round_trips.popleft()
        return self._round_trips[0][1] if self._round_trips else 0.0

    def reset(self) -> None:
        """Forget the frames in flight (a new stream); the samples stay true of the link."""
        self._in_flight.clear()
        self._run = None

    def bytes_per_second(self, now: float) -> float | None:
        """The link's rate as last seen (``None``: no sample yet)."""
        while self._samples and now - self._samples[0][0] > self.window:
            self._samples.popleft()
        if self._samples:
            return max(rate for _, rate in self._samples)
        return self._latest

"""Flow control of the video stream: a bounded number of frames, and of bytes, in flight.

The agent sends a frame only while fewer than ``window`` frames are
unacknowledged, so a slow link lowers the frame rate instead of building a
queue anywhere. Small frames may go beyond that window, up to ``most`` in
flight, while everything unacknowledged is at most ``small_bytes``: over a long
round trip (120 ms: four frames at 30 a second) a count of three held every
typed word back until an older one was acknowledged, and the picture went at 21
frames a second, each some 13 ms late, although its few hundred bytes a frame
queue nowhere. A large frame never goes beyond the window, so what a slow link
can hold in a queue stays about what it was.

Acknowledgements come from every viewer; the window follows the highest
sequence acknowledged. An acknowledgement the relay dropped must not stall the
stream forever, so frames older than ``stall_after`` seconds count as delivered.
"""

from __future__ import annotations

from collections import deque

__all__ = ["MOST_IN_FLIGHT", "SMALL_IN_FLIGHT_BYTES", "FlowWindow"]

SMALL_IN_FLIGHT_BYTES = 32 * 1024
"""Most unacknowledged bytes with which a frame may go beyond the window: about what a
second of typing is (0.3 Mbit/s, raw), an eighth of a second of a 2 Mbit/s link."""

MOST_IN_FLIGHT = 16
"""Most frames in flight however small: half a second of frames at 30 a second, a round
trip longer than any but a satellite link's."""


class FlowWindow:
    """No I/O; sequences are the ``VideoFrame.sequence`` values, increasing from 1."""

    def __init__(self, window: int = 3, stall_after: float = 1.0, *,
                 small_bytes: int = SMALL_IN_FLIGHT_BYTES, most: int = MOST_IN_FLIGHT) -> None:
        if window < 1:
            raise ValueError(f"window must be at least 1, got {window}")
        self.window = window
        self.stall_after = stall_after
        self.small_bytes = small_bytes
        self.most = max(most, window)
        self.acked = 0
        self._sent: deque[tuple[int, float, int]] = deque()  # (sequence, sent at, bytes)
        self._bytes = 0  # of the frames in flight

    def in_flight(self, now: float) -> int:
        self._expire(now)
        return len(self._sent)

    def can_send(self, now: float) -> bool:
        count = self.in_flight(now)
        return count < self.window or (count < self.most and self._bytes <= self.small_bytes)

    def sent(self, sequence: int, size: int, now: float) -> None:
        """Frame ``sequence`` of ``size`` bytes went out at ``now``."""
        self._sent.append((sequence, now, size))
        self._bytes += size

    def ack(self, sequence: int) -> None:
        """A viewer acknowledged ``sequence`` (and so everything before it)."""
        if sequence > self.acked:
            self.acked = sequence
        while self._sent and self._sent[0][0] <= self.acked:
            self._bytes -= self._sent.popleft()[2]

    def reset(self) -> None:
        """Forget what is in flight (a new stream, a new viewer set)."""
        self._sent.clear()
        self._bytes = 0

    def next_deadline(self, now: float) -> float | None:
        """When the oldest frame in flight stops counting, or ``None`` with nothing in flight."""
        self._expire(now)
        return self._sent[0][1] + self.stall_after if self._sent else None

    def _expire(self, now: float) -> None:
        while self._sent and now - self._sent[0][1] >= self.stall_after:
            self._bytes -= self._sent.popleft()[2]

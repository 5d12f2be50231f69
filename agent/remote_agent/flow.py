"""Flow control of the video stream: a bounded number of frames in flight.

The agent sends a frame only while fewer than ``window`` frames are
unacknowledged, so a slow link lowers the frame rate instead of building a
queue anywhere. Acknowledgements come from every viewer; the window follows
the highest sequence acknowledged. An acknowledgement the relay dropped must
not stall the stream forever, so frames older than ``stall_after`` seconds
count as delivered.
"""

from __future__ import annotations

from collections import deque

__all__ = ["FlowWindow"]


class FlowWindow:
    """No I/O; sequences are the ``VideoFrame.sequence`` values, increasing from 1."""

    def __init__(self, window: int = 3, stall_after: float = 1.0) -> None:
        if window < 1:
            raise ValueError(f"window must be at least 1, got {window}")
        self.window = window
        self.stall_after = stall_after
        self.acked = 0
        self._sent: deque[tuple[int, float]] = deque()  # (sequence, sent at)

    def in_flight(self, now: float) -> int:
        self._expire(now)
        return len(self._sent)

    def can_send(self, now: float) -> bool:
        return self.in_flight(now) < self.window

    def sent(self, sequence: int, now: float) -> None:
        self._sent.append((sequence, now))

    def ack(self, sequence: int) -> None:
        """A viewer acknowledged ``sequence`` (and so everything before it)."""
        if sequence > self.acked:
            self.acked = sequence
        while self._sent and self._sent[0][0] <= self.acked:
            self._sent.popleft()

    def reset(self) -> None:
        """Forget what is in flight (a new stream, a new viewer set)."""
        self._sent.clear()

    def next_deadline(self, now: float) -> float | None:
        """When the oldest frame in flight stops counting, or ``None`` with nothing in flight."""
        self._expire(now)
        return self._sent[0][1] + self.stall_after if self._sent else None

    def _expire(self, now: float) -> None:
        while self._sent and now - self._sent[0][1] >= self.stall_after:
            self._sent.popleft()

"""Flow control of the video stream: a bounded number of frames, and of bytes, in flight.

The agent sends a frame only while fewer than ``window`` frames are
unacknowledged, so a slow link lowers the frame rate instead of building a
queue anywhere. Small frames may go beyond that window, up to ``most`` in
flight, while everything unacknowledged is at most ``small_bytes``: over a long
round trip (120 ms: four frames at 30 a second) a count of three held every
typed word back until an older one was acknowledged, and the picture went at 21
frames a second, each some 13 ms late, although its few hundred bytes a frame
queue nowhere. A large frame never goes beyond the window, so what a slow link
can hold in a queue stays about what it was; and a frame larger than ``most_bytes``
(about a second of the link) goes alone, so the next one is the newest picture.

Acknowledgements come from every viewer; the window follows the highest
sequence acknowledged. An acknowledgement the relay dropped must not stall the
stream forever, so a frame counts as delivered ``stall_after`` seconds after the
link should have carried it (the frames in flight before it and itself, at the
link's rate as measured: ``link_rate``), but not while the agent's own socket
still holds much unsent (``unsent``): the link is carrying them then, and
nothing was lost.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

__all__ = ["MOST_IN_FLIGHT", "QUEUED_BYTES", "SMALL_IN_FLIGHT_BYTES", "FlowWindow"]

SMALL_IN_FLIGHT_BYTES = 32 * 1024
"""Most unacknowledged bytes with which a frame may go beyond the window: about what a
second of typing is (0.3 Mbit/s, raw), an eighth of a second of a 2 Mbit/s link."""

MOST_IN_FLIGHT = 16
"""Most frames in flight however small: half a second of frames at 30 a second, a round
trip longer than any but a satellite link's."""

QUEUED_BYTES = 64 * 1024
"""Bytes still queued on the agent's socket above which no frame in flight counts as
delivered for its age. A lossless codec the viewer chose, a photo dragged over 2 Mbit/s:
frames of 400 KB, 1.6 s of the link each, counted as delivered after a second while
still in the socket, and the frames sent after them queued behind; the exact picture
came 3.9-4.3 s after the drag stopped (2-3.5 s with this and :attr:`FlowWindow.most_bytes`).
With the socket down to this, the link still had a third of a second of such a frame to
carry: counted as delivered then, the next frame was a picture a third of a second older
than the one the acknowledgement would have let it take (:attr:`FlowWindow.link_rate`)."""

QUEUE_POLL = 0.05
"""Seconds between looks at the socket's queue while it holds back a frame's expiry (an
acknowledgement wakes the stream sooner)."""


class FlowWindow:
    """No I/O; sequences are the ``VideoFrame.sequence`` values, increasing from 1."""

    def __init__(self, window: int = 3, stall_after: float = 1.0, *,
                 small_bytes: int = SMALL_IN_FLIGHT_BYTES, most: int = MOST_IN_FLIGHT,
                 unsent: Callable[[], int] = lambda: 0) -> None:
        if window < 1:
            raise ValueError(f"window must be at least 1, got {window}")
        self.window = window
        self.stall_after = stall_after
        self.small_bytes = small_bytes
        self.most = max(most, window)
        self.most_bytes: int | None = None
        """Most bytes in flight with which another frame may go (``None``: no such
        limit); the stream sets it to about a second of the link: a frame larger than
        that goes alone."""
        self.link_rate: float | None = None
        """The link's rate as measured, in bytes a second (``None``: not yet known): a
        frame is not lost before the link has carried it and the frames ahead of it."""
        self._unsent = unsent
        """The bytes queued on the agent's socket now (0 where that cannot be told)."""
        self.acked = 0
        # (sequence, when the link should have carried it, bytes)
        self._sent: deque[tuple[int, float, int]] = deque()
        self._bytes = 0  # of the frames in flight

    def in_flight(self, now: float) -> int:
        self._expire(now)
        return len(self._sent)

    def can_send(self, now: float) -> bool:
        count = self.in_flight(now)
        if count and self.most_bytes is not None and self._bytes > self.most_bytes:
            return False
        return count < self.window or (count < self.most and self._bytes <= self.small_bytes)

    def sent(self, sequence: int, size: int, now: float) -> None:
        """Frame ``sequence`` of ``size`` bytes went out at ``now``."""
        self._bytes += size
        carried = now if self.link_rate is None else now + self._bytes / self.link_rate
        self._sent.append((sequence, carried, size))

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
        """When the oldest frame in flight may stop counting, or ``None`` with nothing in
        flight."""
        self._expire(now)
        if not self._sent:
            return None
        deadline = self._sent[0][1] + self.stall_after
        return deadline if deadline > now else now + QUEUE_POLL  # held by the queue

    def _expire(self, now: float) -> None:
        if (self._sent and now - self._sent[0][1] >= self.stall_after
                and self._unsent() > QUEUED_BYTES):
            return  # on its way, not lost
        while self._sent and now - self._sent[0][1] >= self.stall_after:
            self._bytes -= self._sent.popleft()[2]

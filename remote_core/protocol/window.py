"""Flow control by window, with no I/O: the one count both ends of a channel keep.

A sender never has more than the window's size sent and not yet acknowledged;
the receiver acknowledges what it has consumed (shown on screen, written to
disk). A BACKSTAGE terminal keeps one per shell, a file transfer one per
transfer; the server keeps the same count to close a peer that breaks it.
"""

from __future__ import annotations

__all__ = ["Window", "WindowError"]


class WindowError(ValueError):
    """The peer broke the flow-control rules (its message says how)."""


class Window:
    """Bytes in flight on one channel: what was sent and is not acknowledged yet.

    :param size: the window, in bytes.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.in_flight = 0
        self.sent_total = 0
        self.acked_total = 0

    @property
    def room(self) -> int:
        """Bytes that may be sent now (0: wait for an acknowledgement)."""
        return max(0, self.size - self.in_flight)

    def sent(self, count: int) -> None:
        """``count`` more bytes went out.

        :raises WindowError: they overrun the window.
        """
        if count < 0:
            raise WindowError(f"a negative byte count ({count})")
        if count > self.room:
            raise WindowError(f"{count} bytes sent with room for {self.room} "
                              f"(window {self.size}, {self.in_flight} unacknowledged)")
        self.in_flight += count
        self.sent_total += count

    def acked(self, count: int) -> None:
        """The receiver consumed ``count`` more bytes.

        :raises WindowError: it acknowledges more than was sent.
        """
        if count < 0 or count > self.in_flight:
            raise WindowError(f"an acknowledgement of {count} bytes with {self.in_flight} "
                              "unacknowledged")
        self.in_flight -= count
        self.acked_total += count

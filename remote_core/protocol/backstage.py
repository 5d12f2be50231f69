"""The rules of BACKSTAGE terminals that both ends apply, with no I/O.

A backstage session carries a terminal's bytes both ways (``BackstageData``),
its size (``BackstageResize``) and the viewer's acknowledgements of output it
has shown (``BackstageAck``). Output moves under a window: the agent never has
more than :data:`WINDOW` bytes sent and unacknowledged per terminal, so a shell
printing without end (``yes``) waits on its terminal instead of filling the
agent's, the server's or the browser's memory. :class:`Window` is that count;
the agent holds one per shell, and the server holds one per backstage viewer to
close an agent that does not keep to it.
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_COLS",
    "DEFAULT_ROWS",
    "MAX_CHUNK",
    "MAX_SIZE",
    "WINDOW",
    "Window",
    "WindowError",
    "size_refusal",
]

WINDOW = 256 * 1024
"""Output bytes a terminal may have sent and not yet acknowledged."""
MAX_CHUNK = 64 * 1024
"""Most bytes of terminal data in one ``BackstageData``."""
MAX_SIZE = 1000
"""Most rows, and most columns, of a terminal."""
DEFAULT_ROWS = 24
DEFAULT_COLS = 80


class WindowError(ValueError):
    """The peer broke the flow-control rules (its message says how)."""


class Window:
    """Output in flight on one terminal: what was sent and is not acknowledged yet.

    :param size: the window, in bytes.
    """

    def __init__(self, size: int = WINDOW) -> None:
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
            raise WindowError(f"{count} bytes of output with room for {self.room} "
                              f"(window {self.size}, {self.in_flight} unacknowledged)")
        self.in_flight += count
        self.sent_total += count

    def acked(self, count: int) -> None:
        """The viewer showed ``count`` more bytes.

        :raises WindowError: it acknowledges more than was sent.
        """
        if count < 0 or count > self.in_flight:
            raise WindowError(f"an acknowledgement of {count} bytes with {self.in_flight} "
                              "unacknowledged")
        self.in_flight -= count
        self.acked_total += count


def size_refusal(rows: int, cols: int) -> str | None:
    """Why ``rows`` x ``cols`` is no terminal size, or None when it is one."""
    if not (1 <= rows <= MAX_SIZE and 1 <= cols <= MAX_SIZE):
        return (f"a terminal of {rows} rows and {cols} columns; each must be 1 to "
                f"{MAX_SIZE}")
    return None

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

from .window import Window as _Window
from .window import WindowError

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


class Window(_Window):
    """Output in flight on one terminal (:class:`~.window.Window`, sized :data:`WINDOW`)."""

    def __init__(self, size: int = WINDOW) -> None:
        super().__init__(size)


def size_refusal(rows: int, cols: int) -> str | None:
    """Why ``rows`` x ``cols`` is no terminal size, or None when it is one."""
    if not (1 <= rows <= MAX_SIZE and 1 <= cols <= MAX_SIZE):
        return (f"a terminal of {rows} rows and {cols} columns; each must be 1 to "
                f"{MAX_SIZE}")
    return None

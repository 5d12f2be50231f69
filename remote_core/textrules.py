"""One rule for the short texts stored about machines, whoever writes them.

The REST API refuses text that breaks it with a 422 naming the field; the
relay drops an agent-reported field that breaks it and says so in the log.
Either way a control character or a NUL never reaches the store, on any path
(PostgreSQL refuses a NUL outright, SQLite would keep it and serve it back).
"""

from __future__ import annotations

import re

__all__ = ["MAX_REASON", "MAX_TAGS", "MAX_TEXT", "acceptable", "escaped", "printable"]

MAX_TEXT = 200
MAX_TAGS = 64
MAX_REASON = 200

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def printable(text: str) -> bool:
    """No C0 control character (NUL, newline, escape ...) and no DEL."""
    return _CONTROL.search(text) is None


def acceptable(text: str) -> bool:
    """Short enough and printable: what the store takes."""
    return len(text) <= MAX_TEXT and printable(text)


def escaped(text: str, limit: int = MAX_REASON) -> str:
    """A peer's free text (a goodbye or denial reason, an update error) as a record keeps it:
    every control character written out as a visible ``\\xNN``, the whole at most ``limit``
    characters. Unlike the fields above it is kept rather than refused, since it says why
    something happened; escaped, it can neither break a write (PostgreSQL refuses NUL) nor
    forge a line in a log or a console."""
    shown = "".join(c if printable(c) else f"\\x{ord(c):02x}" for c in text[:limit])
    return shown[:limit]

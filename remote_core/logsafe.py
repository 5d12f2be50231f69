"""Text a peer sent, made safe to put in a log line: one line, bounded, visibly quoted.

Anything an agent, a viewer or an unauthenticated client chose (a claimed
agent id, a machine uid, a header) may carry newlines that forge whole log
lines, control characters that confuse terminals, or a megabyte that floods
the log. :func:`peer_text` JSON-quotes it (escaping every control and
non-ASCII character) and cuts it short, saying how much was cut.
"""

from __future__ import annotations

import json

__all__ = ["peer_text"]


def peer_text(value: object, limit: int = 120) -> str:
    """``value`` as a quoted, escaped, single-line string of about ``limit`` characters."""
    text = "" if value is None else str(value)
    shown = json.dumps(text[:limit], ensure_ascii=True)
    return f"{shown}...(+{len(text) - limit} chars)" if len(text) > limit else shown

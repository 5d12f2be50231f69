"""Warnings an operator must see once, not once per request.

A misconfiguration (a proxy the server does not trust, a console on an
origin it does not know) shows on every request; logging each would bury
the one line that says what to change. :class:`Once` remembers what it has
let through, up to a bound, so keys a client chooses (an ``Origin`` header)
can neither grow memory nor flood the log.
"""

from __future__ import annotations

import threading

__all__ = ["Once"]


class Once:
    """Says yes the first time it sees a key, no after; at most ``limit`` keys are kept."""

    def __init__(self, limit: int = 100) -> None:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        self.limit = limit
        self._seen: set[str] = set()
        self._lock = threading.Lock()  # in-process test servers run in other threads

    def first(self, key: str) -> bool:
        """True the first time ``key`` is seen while fewer than ``limit`` keys were."""
        with self._lock:
            if key in self._seen or len(self._seen) >= self.limit:
                return False
            self._seen.add(key)
            return True

    @property
    def full(self) -> bool:
        """True once ``limit`` keys were let through: later keys are never."""
        with self._lock:
            return len(self._seen) >= self.limit

"""Short-lived, one-time entries kept in this process: logins under way (by ``state``) and
finished logins waiting for the console to fetch their token (by one-time code).

In a cluster the load balancer must send one browser to one node for the few seconds a
login takes (sticky sessions), as it already does for the console's WebSocket.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["OneTime"]

T = TypeVar("T")


class OneTime(Generic[T]):
    """Values under random keys, each taken at most once and only within ``ttl`` seconds."""

    def __init__(self, ttl: float, limit: int = 10_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.limit = limit
        self._clock = clock
        self._items: dict[str, tuple[float, T]] = {}

    def put(self, value: T) -> str:
        """Keep ``value``; the random key that takes it back."""
        self._sweep()
        if len(self._items) >= self.limit:  # a flood of started logins evicts the oldest
            self._items.pop(next(iter(self._items)))
        key = secrets.token_urlsafe(32)
        self._items[key] = (self._clock() + self.ttl, value)
        return key

    def take(self, key: str) -> T | None:
        """The value once, if it has not expired; ``None`` otherwise."""
        entry = self._items.pop(key, None)
        if entry is None or entry[0] < self._clock():
            return None
        return entry[1]

    def _sweep(self) -> None:
        now = self._clock()
        for key in [k for k, (until, _) in self._items.items() if until < now]:
            del self._items[key]

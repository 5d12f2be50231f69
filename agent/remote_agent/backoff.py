"""Reconnect delays for managed agents: exponential, with full jitter, reset only when stable.

A fleet of agents that lost one server must not come back in lock-step, so
every delay is drawn uniformly below the exponential ceiling; and an agent
that connects only to be thrown out again keeps backing off, because the
ceiling resets only after a connection has lasted ``stable_after`` seconds.

The ceiling grows 1.6-fold an attempt (gRPC's connection backoff), not twice: an
agent waits at most about as long again as the server has been away, and with
doubling a restart's few seconds down grew into a 16 s wait after it was back
(``bench/reconnect.py``, 2,000 agents, the server down 6 s: all back 18.5-19.3 s after
it answered when doubling, 11.3-14.5 s at 1.6). It still reaches the cap in ten attempts.
"""

from __future__ import annotations

import random
from collections.abc import Callable

__all__ = ["Backoff"]


class Backoff:
    """No I/O: the caller asks :meth:`next_delay`, sleeps, and reports connections."""

    def __init__(self, *, base: float = 1.0, cap: float = 60.0, factor: float = 1.6,
                 stable_after: float = 30.0,
                 rand: Callable[[], float] = random.random) -> None:
        if not 0 < base <= cap:
            raise ValueError(f"need 0 < base <= cap, got base={base}, cap={cap}")
        if factor <= 1:
            raise ValueError(f"need factor > 1, got {factor}")
        self.base = base
        self.cap = cap
        self.factor = factor
        self.stable_after = stable_after
        self._rand = rand
        self.attempt = 0
        self._connected_at: float | None = None

    def ceiling(self) -> float:
        """The largest delay the next attempt may wait."""
        return min(self.cap, self.base * self.factor ** self.attempt)

    def next_delay(self) -> float:
        """How long to wait before the next attempt (and count the attempt)."""
        delay = self.base / 2 + self._rand() * (self.ceiling() - self.base / 2)
        self.attempt += 1
        return delay

    def connected(self, now: float) -> None:
        """A connection was established at ``now`` (monotonic seconds)."""
        self._connected_at = now

    def disconnected(self, now: float) -> None:
        """The connection ended at ``now``; a long-lived one resets the backoff."""
        if self._connected_at is not None and now - self._connected_at >= self.stable_after:
            self.attempt = 0
        self._connected_at = None

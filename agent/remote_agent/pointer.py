"""The pointer, polled in a worker thread that goes back to the event loop only with news.

An input plugin's ``cursor()`` is a blocking poll (an X round trip), made every 1/30 s
after the pointer moved and every 0.1 s once it has been still for a second. Handed to
a worker thread and back one poll at a time, a still pointer woke the event loop twice a
poll, about half of an idle agent's CPU under a viewer. Here the thread polls on its own
until a poll finds a move or a new shape, or the loop wants one now (:meth:`wake`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import anyio

__all__ = ["STILL_AFTER", "PointerWatch", "Poll"]

STILL_AFTER = 1.0
"""Seconds without a move after which the pointer is polled at the slower rate."""

Poll = Callable[[], tuple[tuple[int, int] | None, Any | None]]
"""``InputSink.cursor``: the position if it moved, the shape if it changed."""


class PointerWatch:
    """Polls ``poll`` every ``moving`` seconds after a move (``moved_at()``, a monotonic
    time) and every ``still`` seconds once still, in a worker thread."""

    def __init__(self, poll: Poll, *, moving: float, still: float,
                 moved_at: Callable[[], float]) -> None:
        self._poll = poll
        self._moving, self._still = moving, still
        self._moved_at = moved_at
        self._now = threading.Event()
        self._closed = False
        self._limiter = anyio.CapacityLimiter(1)

    async def changed(self, wanted: Callable[[], bool],
                      due: Callable[[], bool]) -> tuple[tuple[int, int] | None, Any | None]:
        """The next poll that found the pointer moved or its shape changed, or any poll once
        ``due()`` (a viewer needs both again); ``(None, None)`` as soon as ``wanted()`` is
        false (nobody watches)."""
        return await anyio.to_thread.run_sync(self._until_news, wanted, due,
                                              limiter=self._limiter, abandon_on_cancel=True)

    def wake(self) -> None:
        """Poll now (from any thread) rather than at the next tick."""
        self._now.set()

    def close(self) -> None:
        """End the polling thread (it may be in the middle of a poll: that one is its last)."""
        self._closed = True
        self._now.set()

    def _until_news(self, wanted: Callable[[], bool],
                    due: Callable[[], bool]) -> tuple[tuple[int, int] | None, Any | None]:
        while True:
            still = time.monotonic() - self._moved_at() > STILL_AFTER
            if self._now.wait(self._still if still else self._moving):
                self._now.clear()
            if self._closed or not wanted():
                return None, None
            try:
                position, shape = self._poll()
            except Exception:
                if self._closed:  # the devices closed under the last poll
                    return None, None
                raise
            if position is not None or shape is not None or due():
                return position, shape

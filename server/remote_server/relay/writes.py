"""The writes a database outage must not lose, retried until the database takes them.

The relay keeps running while the database is away (live sessions need only
memory), but what happens meanwhile must still reach the records: status
reports, sessions that end, machines going offline, audit events. Each such
write is a coroutine function submitted under a key:

- when nothing is waiting under its key it is tried at once, so in the normal
  case the caller sees its write done when ``submit`` returns;
- when it fails with a :class:`StoreError` (database unreachable, connection
  lost), or something under its key is already waiting, it is queued; one
  drain task retries the queue in arrival order, with exponential backoff,
  until the database answers again;
- writes under one key stay in order; a write submitted with ``coalesce=True``
  replaces a queued write of its key that was also coalescing (only the newest
  status report of a machine matters);
- the queue is bounded: past ``limit`` waiting writes the oldest is dropped,
  and the drop is logged (one line per drop, with the count so far);
- :meth:`close` gives the queue a last chance at shutdown and logs what is lost.

A write that fails for any other reason (a conflict, a bug) is logged and not
retried: trying again would fail the same way.
"""

from __future__ import annotations

import logging
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass

import anyio
from anyio.abc import TaskGroup

from remote_core.errors import ConflictError, NotFoundError, StoreError

__all__ = ["Write", "WriteQueue"]

log = logging.getLogger(__name__)

Write = Callable[[], Awaitable[None]]
"""One durable write; it re-reads whatever it depends on when it runs."""

DEFAULT_LIMIT = 50_000
"""Waiting writes kept at most: a few per machine for a large fleet through a long outage."""


def _retryable(error: Exception) -> bool:
    return isinstance(error, StoreError) and not isinstance(error, ConflictError | NotFoundError)


@dataclass
class _Pending:
    what: str
    write: Write
    coalesce: bool


class WriteQueue:
    """Write now if possible, else later, in order per key; see the module docstring."""

    def __init__(self, *, limit: int = DEFAULT_LIMIT, base_delay: float = 0.25,
                 max_delay: float = 5.0) -> None:
        if limit < 1 or not 0 < base_delay <= max_delay:
            raise ValueError("need limit >= 1 and 0 < base_delay <= max_delay")
        self.limit = limit
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._queues: OrderedDict[Hashable, deque[_Pending]] = OrderedDict()
        self._size = 0
        self._wake = anyio.Event()
        self._idle = anyio.Event()
        self._idle.set()
        self._group: TaskGroup | None = None
        self.dropped = 0
        self.retried = 0

    # -- what callers use ------------------------------------------------------------------
    @property
    def pending(self) -> int:
        """Writes waiting for the database."""
        return self._size

    async def submit(self, key: Hashable, what: str, write: Write, *,
                     coalesce: bool = False) -> None:
        """Write now, or queue the write behind the others of ``key``; never raises.

        :param what: names the write in log lines (no peer text, no secret).
        """
        if key not in self._queues:
            try:
                await write()
                return
            except Exception as error:
                if not _retryable(error):
                    log.exception("could not write %s; not retried", what)
                    return
                log.warning("could not write %s (%s); queued to retry", what, error)
        self._enqueue(key, _Pending(what, write, coalesce))

    async def wait_idle(self) -> None:
        """Return once nothing is waiting (tests and shutdown)."""
        await self._idle.wait()

    # -- the drain task --------------------------------------------------------------------
    def start(self, group: TaskGroup) -> None:
        """Run the drain task in ``group`` (the server's lifespan)."""
        self._group = group
        group.start_soon(self._drain)

    async def close(self, wait: float = 5.0) -> None:
        """Give waiting writes ``wait`` seconds, then stop; log what could not be written."""
        with anyio.move_on_after(wait):
            await self._idle.wait()
        if self._size:
            log.error("shutting down with %d writes the database never took; they are lost",
                      self._size)
        if self._group is not None:
            self._group.cancel_scope.cancel()

    async def _drain(self) -> None:
        delay = self.base_delay
        while True:
            if not self._queues:
                self._wake = anyio.Event()
                await self._wake.wait()
                continue
            key, queue = next(iter(self._queues.items()))
            head = queue[0]
            try:
                await head.write()
            except Exception as error:
                if _retryable(error):
                    self.retried += 1
                    log.debug("retrying %s in %.2f s: %s", head.what, delay, error)
                    await anyio.sleep(delay)
                    delay = min(self.max_delay, delay * 2)
                    continue
                log.exception("could not write %s; not retried", head.what)
            else:
                if delay > self.base_delay:
                    log.info("the database takes writes again; %d waiting", self._size - 1)
                delay = self.base_delay
            self._pop(key, head)

    # -- the queue -------------------------------------------------------------------------
    def _enqueue(self, key: Hashable, item: _Pending) -> None:
        queue = self._queues.setdefault(key, deque())
        if item.coalesce and len(queue) > 1 and queue[-1].coalesce:
            queue[-1] = item  # the head may be running: only a later entry is replaced
            return
        if self._size >= self.limit:
            self._drop_oldest()
            queue = self._queues.setdefault(key, deque())
        queue.append(item)
        self._size += 1
        self._idle = anyio.Event() if self._idle.is_set() else self._idle
        self._wake.set()

    def _drop_oldest(self) -> None:
        key, queue = next(iter(self._queues.items()))
        lost = queue.popleft()  # if the drain is writing it now, _pop will not count it twice
        if not queue:
            del self._queues[key]
        self._size -= 1
        self.dropped += 1
        log.error("write queue full (%d waiting for the database): dropped %s; %d dropped so "
                  "far", self.limit, lost.what, self.dropped)

    def _pop(self, key: Hashable, item: _Pending) -> None:
        queue = self._queues.get(key)
        if queue and queue[0] is item:
            queue.popleft()
            self._size -= 1
            if not queue:
                del self._queues[key]
            else:
                self._queues.move_to_end(key)  # the other keys get their turn
        if not self._queues:
            self._idle.set()

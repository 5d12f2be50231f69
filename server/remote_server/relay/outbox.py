"""What one socket still has to send, bounded in bytes: the backpressure policy.

Each connected peer has one :class:`Outbox`, drained by that peer's own
writer task, so a slow reader only ever fills its own outbox. Three kinds of
message go in:

- **video frames**: when the outbox is over its budget the frame is dropped
  and the outbox skips every following frame until a keyframe arrives (a
  delta frame without its predecessors is useless). The keyframe then
  replaces whatever stale video is still queued.
- **lossy** messages (cursor moves, latency reports): dropped when over budget.
- **reliable** messages (control, chat, input): always queued, but a peer
  whose backlog reaches twice the budget is beyond saving and is closed.

Memory per peer is therefore at most about twice the budget plus one message.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import anyio

from remote_core.protocol import is_keyframe

from ..observe.counters import RELAY

__all__ = ["Close", "Outbox"]


@dataclass(frozen=True, slots=True)
class Close:
    """The writer's last instruction: close the socket with ``code`` and ``reason``."""

    code: int
    reason: str


class Outbox:
    """A byte-bounded queue with the relay's drop policy; one writer task drains it."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.queued_bytes = 0
        self.dropped_frames = 0
        self.dropped_lossy = 0
        self.skipping = False
        self._items: deque[tuple[bytes, bool]] = deque()  # (data, is_video)
        self._close: Close | None = None
        # the writer's wake-up, made per wait: asyncio's own (the server runs on asyncio),
        # as anyio's costs 3 us to make, more than the rest of a small message's queueing
        self._wakeup: asyncio.Event | None = None
        self._drained: anyio.Event | None = None  # a producer waits for room (wait_room)
        self.closing = anyio.Event()  # set once close() was asked for
        self.direct: Callable[[bytes], bool] | None = None
        """Writes a message at once if the socket takes it (``Transport.send_now``): what
        arrives while the writer waits on an empty outbox goes out without waking it."""

    def __len__(self) -> int:
        return len(self._items)

    @property
    def closed(self) -> bool:
        return self._close is not None

    @property
    def close_reason(self) -> str | None:
        return self._close.reason if self._close is not None else None

    # -- producers (synchronous: they never wait for the reader) ---------------------
    def put_frame(self, data: bytes, offset: int, *, decodable: bool = True) -> bool:
        """Queue a ``VideoFrame`` message; return True when it was dropped and the peer
        now waits for a keyframe (the caller may ask the agent for one).

        ``offset`` is where the ``VideoFrame`` payload starts in ``data``. A frame the
        peer cannot decode (``decodable`` false: a codec it did not list) is dropped
        and the peer resumes at a keyframe of a codec it decodes; asking the agent for
        one would not help: it already chose the codec for every viewer it has.
        """
        if self._close is not None:
            return False
        if not decodable:
            self.dropped_frames += 1
            RELAY.frames_dropped += 1
            self.skipping = True
            return False
        if self.skipping:
            if not is_keyframe(data, offset):
                self.dropped_frames += 1
                RELAY.frames_dropped += 1
                return True
            self.skipping = False
            self._discard_video()
        elif self._items and self.queued_bytes + len(data) > self.budget:
            self.dropped_frames += 1
            RELAY.frames_dropped += 1
            self.skipping = True
            return True
        self._append(data, True)
        return False

    def put(self, data: bytes, *, lossy: bool = False) -> bool:
        """Queue a non-video message; False if it was dropped (lossy, over budget)
        or the peer is too far behind to keep (the outbox is then closed)."""
        if self._close is not None:
            return False
        if self.queued_bytes + len(data) > self.budget and self._items:
            if lossy:
                self.dropped_lossy += 1
                return False
            if self.queued_bytes + len(data) > 2 * self.budget:
                self.close(1008, "peer cannot keep up", drain=False)
                return False
        self._append(data, False)
        return True

    async def wait_room(self, limit: int) -> None:
        """Wait until at most ``limit`` bytes are queued, or the outbox closes: for a
        producer that can be made to wait (a technician's terminal input waits here, so a
        huge paste slows its own socket instead of filling the agent's outbox)."""
        while self.queued_bytes > limit and self._close is None:
            drained = self._drained = self._drained or anyio.Event()
            await drained.wait()

    def close(self, code: int, reason: str, *, farewell: bytes | None = None,
              drain: bool = True) -> None:
        """Ask the writer to close the socket, after the queue (``drain``) and ``farewell``."""
        if self._close is not None:
            return
        if not drain:
            self._items.clear()
            self.queued_bytes = 0
        if farewell is not None:
            self._append(farewell, False)
        self._close = Close(code, reason[:120])
        self.closing.set()
        self._wake()
        self._room()

    # -- the writer ----------------------------------------------------------------
    async def get(self) -> bytes | Close:
        """The next message to send, or :class:`Close` once everything queued is out."""
        while not self._items:
            if self._close is not None:
                return self._close
            self._wakeup = asyncio.Event()
            await self._wakeup.wait()
        data, is_video = self._items.popleft()
        self.queued_bytes -= len(data)
        self._room()
        _count_out(data, is_video)
        return data

    def _append(self, data: bytes, is_video: bool) -> None:
        if (not self._items and self._wakeup is not None and self.direct is not None
                and self.direct(data)):  # the writer idle, nothing before it: in order
            RELAY.messages_direct += 1
            _count_out(data, is_video)
            return
        self._items.append((data, is_video))
        self.queued_bytes += len(data)
        self._wake()

    def _wake(self) -> None:
        wakeup = self._wakeup
        if wakeup is not None:
            self._wakeup = None
            wakeup.set()

    def _room(self) -> None:
        drained = self._drained
        if drained is not None:
            self._drained = None
            drained.set()  # the waiters look at the queue again

    def _discard_video(self) -> None:
        kept = deque(item for item in self._items if not item[1])
        self.dropped_frames += len(self._items) - len(kept)
        RELAY.frames_dropped += len(self._items) - len(kept)
        self._items = kept
        self.queued_bytes = sum(len(data) for data, _ in kept)


def _count_out(data: bytes, is_video: bool) -> None:
    """A message on its way to the socket, by the writer or at once."""
    if is_video:
        RELAY.frames_out += 1
        RELAY.bytes_out += len(data)

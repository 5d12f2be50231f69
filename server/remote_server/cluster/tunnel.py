"""A viewer's socket carried over the bus to the node that holds its session.

The viewer's node (the edge) reads the socket's first message, finds the
session's node (the owner) and pipes bytes both ways; the owner serves the
viewer with the relay's own :func:`~remote_server.relay.peer.serve_viewer`
over a :class:`BusTransport`, so every rule of one node (the first message,
the token, consent, the route table, view-only, heartbeats, the outbox that
drops video to the next keyframe for a slow viewer) holds unchanged.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..relay.peer import Transport
from . import frames

__all__ = ["WINDOW", "BusTransport", "pipe"]

log = logging.getLogger(__name__)

WINDOW = 4 * 1024 * 1024
"""Bytes the owner sends ahead of what the edge has written to the viewer's socket."""
CREDIT_EVERY = WINDOW // 8
"""The edge reports what it has written once this much more has been (a credit message per
frame would double the bus's messages)."""

Publish = Callable[[str, bytes], Awaitable[None]]


def subjects(prefix: str, tunnel: str) -> tuple[str, str]:
    """(viewer to owner, owner to viewer)."""
    return f"{prefix}.tunnel.{tunnel}.up", f"{prefix}.tunnel.{tunnel}.down"


class BusTransport:
    """The owner's end: the relay's :class:`Transport` over a tunnel's two subjects.

    :param publish: publishes one bus message; ``chunk`` is the largest body the bus
        takes in one message.
    """

    def __init__(self, prefix: str, tunnel: str, publish: Publish, *, chunk: int,
                 limit: int) -> None:
        self.tunnel = tunnel
        self._up, self._down = subjects(prefix, tunnel)
        self._publish = publish
        self._chunk = chunk
        self._reassembler = frames.Reassembler(limit)
        self._inbox: tuple[MemoryObjectSendStream[bytes | str | None],
                           MemoryObjectReceiveStream[bytes | str | None]] = (
            anyio.create_memory_object_stream[bytes | str | None](math.inf))
        self._sent = 0
        self._written = 0
        self._room = anyio.Event()
        self._closed = False

    @property
    def up_subject(self) -> str:
        return self._up

    def deliver(self, message: bytes) -> None:
        """A bus message from the edge (the subscription's callback)."""
        try:
            item = self._reassembler.feed(message)
        except ValueError as exc:
            log.warning("tunnel %s: %s", self.tunnel, exc)
            item = None
            self.gone()
            return
        if isinstance(item, frames.Credit):
            self._written = max(self._written, item.size)
            self._room.set()
        elif isinstance(item, frames.Close):
            self.gone()
        elif item is not None:
            self._inbox[0].send_nowait(item)

    def gone(self) -> None:
        """The edge (or its node) has gone: the relay reads the end of the socket."""
        self._closed = True
        self._room.set()
        try:
            self._inbox[0].send_nowait(None)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    async def receive(self) -> bytes | str | None:
        try:
            return await self._inbox[1].receive()
        except anyio.EndOfStream:
            return None

    async def send(self, data: bytes) -> None:
        while self._sent - self._written > WINDOW and not self._closed:
            self._room = anyio.Event()
            await self._room.wait()
        if self._closed:
            return
        self._sent += len(data)
        for message in frames.data(data, self._chunk):
            await self._publish(self._down, message)

    async def close(self, code: int, reason: str) -> None:
        if not self._closed:
            self._closed = True
            await self._publish(self._down, frames.close(code, reason))


async def pipe(socket: Transport, first: bytes, prefix: str, tunnel: str, publish: Publish,
               subscribe: Callable[[str, Callable[[bytes], Awaitable[None]]], Awaitable[Any]],
               *, chunk: int, limit: int, owner_lost: anyio.Event) -> str:
    """The edge's end: the viewer's socket to the tunnel and back, until either side
    closes or the owner's node goes away; returns why it ended."""
    up, down = subjects(prefix, tunnel)
    reassembler = frames.Reassembler(limit)
    written = credited = 0
    ended = anyio.Event()
    why = "the viewer left"

    async def from_owner(message: bytes) -> None:
        nonlocal written, credited, why
        if ended.is_set():
            return
        try:
            item = reassembler.feed(message)
        except ValueError as exc:
            why = f"tunnel error: {exc}"
            ended.set()
            return
        try:
            if isinstance(item, frames.Close):
                why = item.reason or "closed by the session's node"
                await socket.close(item.code, item.reason)
                ended.set()
            elif isinstance(item, bytes):
                await socket.send(item)
                written += len(item)
                if written - credited >= CREDIT_EVERY:
                    credited = written
                    await publish(up, frames.credit(written))
        except Exception:  # the viewer's socket went first
            log.debug("tunnel %s: the viewer's socket is gone", tunnel, exc_info=True)
            ended.set()

    subscription = await subscribe(down, from_owner)
    try:
        async with anyio.create_task_group() as group:
            async def from_viewer() -> None:
                nonlocal why
                message: bytes | str | None = first
                while message is not None:
                    if isinstance(message, str):
                        await publish(up, frames.text(message))
                    else:
                        for part in frames.data(message, chunk):
                            await publish(up, part)
                    message = await socket.receive()
                await publish(up, frames.close(1000, "viewer disconnected"))
                ended.set()

            async def watch_owner() -> None:
                nonlocal why
                await owner_lost.wait()
                why = "the session's server node went away"
                await socket.close(1012, why)
                ended.set()

            group.start_soon(from_viewer)
            group.start_soon(watch_owner)
            await ended.wait()
            group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await subscription.unsubscribe()
    return why

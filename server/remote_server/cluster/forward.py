"""A viewer's socket forwarded to the node that holds its session, node to node.

The viewer's node (the edge) opens the owner's own ``/ws/viewer`` and tunnels the
viewer's socket to it, as a reverse proxy would: the owner serves the viewer with every
rule of one node. The owner's frames go to the viewer as the bytes they are, whole
(:mod:`.frames`), never taken apart into messages and put together again
(``bench/cluster.py``: 1 -> 1 at 100 KB on shared cores, forwarded throughput went
from 0.44 to 0.59-0.60 of same-node); the viewer's messages, which the edge reads anyway
(the first names the session), go to the owner as a client's frames. TCP flow control
carries a slow viewer's backlog back to the owner's outbox for that viewer, whose policy
drops video to the next keyframe. The edge names the viewer's address in
``X-Forwarded-For`` (the owner believes it when the edge is one of its
``TRUSTED_PROXIES``) and sends no ``Origin``: the edge checked it.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable
from typing import Protocol, cast
from urllib.parse import urlsplit

import anyio
from websockets.client import ClientProtocol
from websockets.frames import Close, Frame, Opcode
from websockets.uri import parse_uri

from remote_core.protocol import CloseCode

from ..relay.peer import Transport
from .frames import FrameTooLarge, WholeFrames

__all__ = ["ViewerEnd", "forward"]

log = logging.getLogger(__name__)

OPEN_TIMEOUT = 5.0
"""Seconds the owner has to accept the forwarded socket."""

GONE = "the session's server node went away"


class ViewerEnd(Protocol):
    """The viewer's socket as this node's WebSocket server holds it
    (``remote_server.web.wsprotocol.RelayWebSocketProtocol``)."""

    transport: asyncio.Transport
    on_writable: Callable[[bool], None] | None

    def closing(self) -> bool:
        """A close frame went out, or the socket is going: no frame may follow."""
        ...

    def resume_reading(self) -> None:
        """Read again (unless a message waits for the app)."""
        ...


class _Upstream(asyncio.Protocol):
    """The edge's socket to the owner's ``/ws/viewer``: the upgrade, then the owner's
    frames on to the viewer whole, and the viewer's messages to the owner."""

    def __init__(self, url: str, client_ip: str, viewer: ViewerEnd, limit: int) -> None:
        self._upgrade = ClientProtocol(parse_uri(url), max_size=None)
        request = self._upgrade.connect()
        request.headers["X-Forwarded-For"] = client_ip
        self._upgrade.send_request(request)
        self._answer = bytearray()  # the owner's answer to the upgrade, until it is whole
        self._viewer = viewer
        self.frames = WholeFrames(limit)
        self.opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.ended = asyncio.Event()  # the owner closed, or its connection is gone
        self.transport: asyncio.Transport | None = None
        self._full = False  # the owner takes the viewer's messages slower than they come

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self.transport.write(b"".join(self._upgrade.data_to_send()))

    def data_received(self, data: bytes) -> None:
        if not self.opened.done():
            data = self._opening(data)
        if not data:
            return
        try:
            whole = self.frames.feed(data)
        except FrameTooLarge as exc:
            log.warning("the session's node sent %s; forwarding ended", exc)
            self._cut()
            return
        if whole and not self._viewer.closing():
            self._viewer.transport.write(whole)
        if self.frames.close is not None:
            self._cut(pause=True)

    def _opening(self, data: bytes) -> bytes:
        """Takes the owner's answer to the upgrade; returns what came after it."""
        self._answer += data
        end = self._answer.find(b"\r\n\r\n") + 4
        if end < 4:
            if len(self._answer) > 65536:
                self.opened.set_exception(ConnectionError("the session's node answered the "
                                                          "upgrade with over 64 KB"))
                self._cut()
            return b""
        self._upgrade.receive_data(bytes(self._answer[:end]))
        self._upgrade.events_received()
        refused = self._upgrade.handshake_exc
        if refused is not None:
            self.opened.set_exception(ConnectionError(f"the session's node refused the "
                                                      f"socket: {refused}"))
            self._cut()
            return b""
        self.opened.set_result(None)
        rest, self._answer = bytes(self._answer[end:]), bytearray()
        return rest

    def _cut(self, *, pause: bool = False) -> None:
        """Nothing more passes to the viewer: the owner closed (its close frame kept back,
        for the app to send in its own name), or the stream is not one to pass on."""
        assert self.transport is not None
        if pause:
            self.transport.pause_reading()
        else:
            self.transport.abort()
        self.ended.set()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.opened.done():
            self.opened.set_exception(ConnectionError("the session's node closed the "
                                                      "connection"))
        self.ended.set()

    def pause_writing(self) -> None:
        self._full = True

    def resume_writing(self) -> None:
        self._full = False
        self._viewer.resume_reading()

    def viewer_writable(self, writable: bool) -> None:
        """Reads the owner's frames only as fast as the viewer takes them."""
        if self.transport is None or self.frames.close is not None:
            return
        if writable:
            self.transport.resume_reading()
        else:
            self.transport.pause_reading()

    def send(self, message: bytes | str) -> None:
        """One of the viewer's messages, on to the owner as a client's (masked) frame."""
        if self.transport is None or self.transport.is_closing():
            return  # the owner's node is gone: the app is closing the viewer's socket
        frame = (Frame(Opcode.TEXT, message.encode()) if isinstance(message, str)
                 else Frame(Opcode.BINARY, message))
        self.transport.write(frame.serialize(mask=True))
        if self._full:
            self._viewer.transport.pause_reading()

    def take(self, message: bytes) -> bytes:
        """:meth:`send`, as an inline answer: taken where the viewer's socket reads it."""
        self.send(message)
        return b""

    def close(self) -> None:
        """Ends the socket to the owner, with a close frame once it was open."""
        if not self.opened.done():
            self.opened.cancel()
        if self.transport is None or self.transport.is_closing():
            return
        if not self.opened.cancelled() and self.opened.exception() is None:
            close = Frame(Opcode.CLOSE, Close(1000, "").serialize())
            self.transport.write(close.serialize(mask=True))
        self.transport.close()


async def _open(url: str, client_ip: str, viewer: ViewerEnd, limit: int) -> _Upstream:
    parts = urlsplit(url)
    if parts.hostname is None:
        raise ConnectionError(f"the session's node has no host in its address {url!r}")
    secure = parts.scheme == "wss"
    upstream = _Upstream(url, client_ip, viewer, limit)
    try:
        with anyio.fail_after(OPEN_TIMEOUT):
            await asyncio.get_running_loop().create_connection(
                lambda: upstream, parts.hostname, parts.port or (443 if secure else 80),
                ssl=ssl.create_default_context() if secure else None)
            await upstream.opened
    except BaseException:
        upstream.close()
        raise
    return upstream


async def forward(socket: Transport, viewer: ViewerEnd, first: bytes, owner_url: str, *,
                  client_ip: str, session_hint: str | None, limit: int,
                  owner_lost: anyio.Event) -> str:
    """Tunnel the viewer's socket to ``owner_url``'s until either side closes or the
    owner's node goes away; returns why it ended. Raises :class:`OSError` when the owner
    cannot be reached or refuses the socket."""
    url = owner_url.replace("http", "ws", 1) + "/ws/viewer"
    if session_hint:
        url += f"?session_id={session_hint}"
    upstream = await _open(url, client_ip, viewer, limit)
    why = "the viewer left"
    viewer.on_writable = upstream.viewer_writable
    socket.answer_inline(upstream.take)
    try:
        upstream.send(first)
        async with anyio.create_task_group() as group:
            async def from_viewer() -> None:
                while (message := await socket.receive()) is not None:
                    upstream.send(message)
                group.cancel_scope.cancel()

            async def until_the_owner_ends() -> None:
                nonlocal why
                await upstream.ended.wait()
                code, reason = upstream.frames.close or (CloseCode.SERVICE_RESTART, GONE)
                why = reason or "closed by the session's node"
                await socket.close(1000 if code == 1005 else code, reason)
                group.cancel_scope.cancel()

            async def until_the_owner_is_lost() -> None:
                nonlocal why
                await owner_lost.wait()
                why = GONE
                await socket.close(CloseCode.SERVICE_RESTART, why)
                group.cancel_scope.cancel()

            group.start_soon(from_viewer)
            group.start_soon(until_the_owner_ends)
            group.start_soon(until_the_owner_is_lost)
    finally:
        viewer.on_writable = None
        socket.answer_inline(None)
        upstream.close()
    return why

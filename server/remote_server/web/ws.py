"""The two WebSocket endpoints, ``/ws/agent`` and ``/ws/viewer`` (CONTRACT 1).

A thin Starlette edge: check the upgrade (the viewer's ``Origin``, see
:mod:`.origin`; the caps on sockets still owing their ``SessionRequest``, see
:mod:`.pending`), accept, and hand the socket to the relay's drivers as a
:class:`~remote_server.relay.peer.Transport`. Everything else, from the first
message to the close frame, happens in :mod:`remote_server.relay`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from starlette.routing import WebSocketRoute
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket

from remote_core.logsafe import peer_text
from remote_core.protocol import CloseCode

from ..observe.counters import rate_limited
from ..relay.peer import InlineAnswer, serve_agent, serve_viewer
from .clientip import client_ip
from .context import ServerContext
from .origin import check_origin
from .pending import Slot
from .viewers import viewer_verifier
from .wsprotocol import INLINE_ANSWERS, RAW_SOCKET, InlineAnswers, RelayWebSocketProtocol

__all__ = ["routes"]

log = logging.getLogger(__name__)


class AsgiTransport:
    """An accepted WebSocket as the relay's transport, on the raw ASGI callables.

    Starlette's ``WebSocket`` does the handshake; after it, every message of the
    hot path goes straight through ``receive``/``send`` without its per-call
    state checks.

    :param answered: called once, at the first message received or sent, or the
        close: the socket has spoken (or been answered), it is no longer pending.
    """

    def __init__(self, scope: Scope, receive: Receive, send: Send,
                 answered: Callable[[], None] | None = None) -> None:
        self._receive = receive
        self._send = send
        self._answered = answered
        extensions = scope.get("extensions", {})
        self._inline: InlineAnswers | None = extensions.get(INLINE_ANSWERS)
        self._socket: RelayWebSocketProtocol | None = extensions.get(RAW_SOCKET)
        self._answer: InlineAnswer | None = None

    def _settle(self) -> None:
        if self._answered is not None:
            self._answered()
            self._answered = None

    async def receive(self) -> bytes | str | None:
        inline = self._inline
        if inline is None or self._answer is None:
            message = await self._receive()
        else:
            inline.answer = self._answer  # only while the reader waits: a reply never
            try:                          # overtakes what the peer said before
                message = await self._receive()
            finally:
                inline.answer = None
        if message["type"] == "websocket.disconnect":
            return None
        if self._answered is not None:
            self._settle()  # its first message is in: no longer silent
        data = message.get("bytes")
        if data is not None:
            return bytes(data)
        return str(message.get("text") or "")

    async def send(self, data: bytes) -> None:
        if self._answered is not None:
            self._settle()
        await self._send({"type": "websocket.send", "bytes": data})

    def send_now(self, data: bytes) -> bool:
        """Through the protocol itself (``RAW_SOCKET``), once the socket has been answered:
        no task woken; the ASGI middleware has nothing to do with a WebSocket's messages."""
        return self._answered is None and self._socket is not None and self._socket.send_now(data)

    async def close(self, code: int, reason: str) -> None:
        self._settle()
        await self._send({"type": "websocket.close", "code": code, "reason": reason})

    def answer_inline(self, answer: InlineAnswer | None) -> None:
        """Through the server's :class:`InlineAnswers`, offered while :meth:`receive` waits
        (under another WebSocket implementation, ``ws_impl``, there is none: every
        message comes to :meth:`receive`)."""
        self._answer = answer


def _context(websocket: WebSocket) -> ServerContext:
    ctx: ServerContext = websocket.app.state.ctx
    return ctx


@asynccontextmanager
async def _pending(websocket: WebSocket, ctx: ServerContext,
                   address: str) -> AsyncIterator[Slot | None]:
    """Accept the socket as pending, or accept and close it with 1013 when a cap is reached.

    Yields the socket's slot (None when refused); the slot is freed on the way out
    whatever happened, and earlier by the transport once the request is answered.
    """
    slot = ctx.pending.admit(address)
    if slot is None:
        rate_limited("pending_sockets", 0.0)
        try:
            await websocket.accept()
            await websocket.close(CloseCode.TRY_AGAIN_LATER, "too many connections awaiting their "
                                                   "session_request; try again later")
        except Exception:  # a flood's socket gone already: no traceback per socket
            log.debug("a refused socket from %s left first", peer_text(address),
                      exc_info=True)
        yield None
        return
    try:
        await websocket.accept()
        yield slot
    finally:
        slot.release()


async def agent_socket(scope: Scope, receive: Receive, send: Send) -> None:
    websocket = WebSocket(scope, receive, send)
    ctx = _context(websocket)
    address = client_ip(scope, ctx.settings)
    async with _pending(websocket, ctx, address) as slot:
        if slot is None:
            return
        await serve_agent(AsgiTransport(scope, receive, send, slot.release), ctx.registry,
                          ctx.limiter, client_ip=address,
                          machine_uid=websocket.headers.get("x-machine-uid"))


async def viewer_socket(scope: Scope, receive: Receive, send: Send) -> None:
    websocket = WebSocket(scope, receive, send)
    ctx = _context(websocket)
    if not check_origin(websocket.headers.get("origin"), scope, ctx.settings):
        await websocket.close(code=1008)  # before accept: the upgrade is refused with 403
        return
    address = client_ip(scope, ctx.settings)
    async with _pending(websocket, ctx, address) as slot:
        if slot is None:
            return
        transport = AsgiTransport(scope, receive, send, slot.release)
        hint = websocket.query_params.get("session_id") or None
        if ctx.cluster is not None:
            await ctx.cluster.serve_viewer(transport, scope["extensions"][RAW_SOCKET],
                                           client_ip=address, session_hint=hint)
        else:
            await serve_viewer(transport, ctx.registry, viewer_verifier(ctx.tokens),
                               client_ip=address, session_hint=hint)


class _Endpoint:
    """An ASGI app for ``WebSocketRoute`` (a plain function would be wrapped per message)."""

    def __init__(self, handler: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self._handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._handler(scope, receive, send)


def routes() -> list[WebSocketRoute]:
    return [WebSocketRoute("/ws/agent", _Endpoint(agent_socket)),
            WebSocketRoute("/ws/viewer", _Endpoint(viewer_socket))]

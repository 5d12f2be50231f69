"""The two WebSocket endpoints, ``/ws/agent`` and ``/ws/viewer`` (CONTRACT 1).

A thin Starlette edge: check the upgrade (the viewer's ``Origin``, see
:mod:`.origin`), accept, and hand the socket to the relay's drivers as a
:class:`~remote_core.relay.peer.Transport`. Everything else, from the first
message to the close frame, happens in :mod:`remote_core.relay`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.routing import WebSocketRoute
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket

from ..relay.auth import Refused
from ..relay.peer import ViewerVerifier, serve_agent, serve_viewer
from .clientip import client_ip
from .context import ServerContext
from .origin import check_origin
from .tokens import TokenError, TokenService

__all__ = ["routes"]


class AsgiTransport:
    """An accepted WebSocket as the relay's transport, on the raw ASGI callables.

    Starlette's ``WebSocket`` does the handshake; after it, every message of the
    hot path goes straight through ``receive``/``send`` without its per-call
    state checks.
    """

    def __init__(self, receive: Receive, send: Send) -> None:
        self._receive = receive
        self._send = send

    async def receive(self) -> bytes | str | None:
        message = await self._receive()
        if message["type"] == "websocket.disconnect":
            return None
        data = message.get("bytes")
        if data is not None:
            return bytes(data)
        return str(message.get("text") or "")

    async def send(self, data: bytes) -> None:
        await self._send({"type": "websocket.send", "bytes": data})

    async def close(self, code: int, reason: str) -> None:
        await self._send({"type": "websocket.close", "code": code, "reason": reason})


def _verifier(tokens: TokenService) -> ViewerVerifier:
    def verify(token: str, session_id: str | None) -> tuple[str, str, str]:
        try:
            claims = tokens.verify_viewer(token, session_id)
        except TokenError as exc:
            raise Refused(f"viewer token refused: {exc}") from None
        return claims.user_id, claims.session_id, claims.password_version

    return verify


def _context(websocket: WebSocket) -> ServerContext:
    ctx: ServerContext = websocket.app.state.ctx
    return ctx


async def agent_socket(scope: Scope, receive: Receive, send: Send) -> None:
    websocket = WebSocket(scope, receive, send)
    ctx = _context(websocket)
    await websocket.accept()
    await serve_agent(AsgiTransport(receive, send), ctx.registry, ctx.limiter,
                      client_ip=client_ip(scope, ctx.settings),
                      machine_uid=websocket.headers.get("x-machine-uid"))


async def viewer_socket(scope: Scope, receive: Receive, send: Send) -> None:
    websocket = WebSocket(scope, receive, send)
    ctx = _context(websocket)
    if not check_origin(websocket.headers.get("origin"), scope, ctx.settings):
        await websocket.close(code=1008)  # before accept: the upgrade is refused with 403
        return
    await websocket.accept()
    await serve_viewer(AsgiTransport(receive, send), ctx.registry, _verifier(ctx.tokens),
                       client_ip=client_ip(scope, ctx.settings),
                       session_hint=websocket.query_params.get("session_id") or None)


class _Endpoint:
    """An ASGI app for ``WebSocketRoute`` (a plain function would be wrapped per message)."""

    def __init__(self, handler: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self._handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._handler(scope, receive, send)


def routes() -> list[WebSocketRoute]:
    return [WebSocketRoute("/ws/agent", _Endpoint(agent_socket)),
            WebSocketRoute("/ws/viewer", _Endpoint(viewer_socket))]

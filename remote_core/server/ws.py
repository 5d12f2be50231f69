"""The two WebSocket endpoints, ``/ws/agent`` and ``/ws/viewer`` (CONTRACT 1).

A thin Starlette edge: check the upgrade (the viewer's ``Origin``), accept,
and hand the socket to the relay's drivers as a
:class:`~remote_core.relay.peer.Transport`. Everything else, from the first
message to the close frame, happens in :mod:`remote_core.relay`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette.routing import WebSocketRoute
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket

from ..relay.auth import Refused
from ..relay.peer import ViewerVerifier, serve_agent, serve_viewer
from ..settings import Settings
from .clientip import client_ip
from .context import ServerContext
from .tokens import TokenError, TokenService

__all__ = ["origin_allowed", "routes"]


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


def origin_allowed(origin: str, scope: Mapping[str, Any], settings: Settings) -> bool:
    """The configured public origins, else the server's own (scheme and Host header)."""
    origin = origin.strip().rstrip("/").lower()
    if settings.public_origins:
        return origin in {o.strip().rstrip("/").lower() for o in settings.public_origins}
    headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}
    host = headers.get("host", "").strip().lower()
    scheme = "https" if scope.get("scheme") in ("wss", "https") else "http"
    return bool(host) and origin == f"{scheme}://{host}"


def _verifier(tokens: TokenService) -> ViewerVerifier:
    def verify(token: str, session_id: str | None) -> tuple[str, str]:
        try:
            claims = tokens.verify_viewer(token, session_id)
        except TokenError as exc:
            raise Refused(f"viewer token refused: {exc}") from None
        return claims.user_id, claims.session_id

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
    origin = websocket.headers.get("origin")
    if origin is not None and not origin_allowed(origin, scope, ctx.settings):
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

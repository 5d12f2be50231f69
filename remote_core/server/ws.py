"""The two WebSocket endpoints, ``/ws/agent`` and ``/ws/viewer`` (CONTRACT 1).

A thin Starlette edge: check the upgrade (the viewer's ``Origin``), accept,
and hand the socket to the relay's drivers as a
:class:`~remote_core.relay.peer.Transport`. Everything else, from the first
message to the close frame, happens in :mod:`remote_core.relay`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket

from ..relay.auth import Refused
from ..relay.peer import ViewerVerifier, serve_agent, serve_viewer
from ..settings import Settings
from .clientip import client_ip
from .context import ServerContext
from .tokens import TokenError, TokenService

__all__ = ["origin_allowed", "routes"]


class StarletteTransport:
    """A Starlette WebSocket as the relay's transport (bytes in, bytes out)."""

    def __init__(self, websocket: WebSocket) -> None:
        self._websocket = websocket

    async def receive(self) -> bytes | str | None:
        message = await self._websocket.receive()
        if message["type"] == "websocket.disconnect":
            return None
        data = message.get("bytes")
        if data is not None:
            return bytes(data)
        return str(message.get("text") or "")

    async def send(self, data: bytes) -> None:
        await self._websocket.send({"type": "websocket.send", "bytes": data})

    async def close(self, code: int, reason: str) -> None:
        await self._websocket.close(code, reason)


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


async def agent_socket(websocket: WebSocket) -> None:
    ctx = _context(websocket)
    await websocket.accept()
    await serve_agent(StarletteTransport(websocket), ctx.registry, ctx.limiter,
                      client_ip=client_ip(websocket.scope, ctx.settings),
                      machine_uid=websocket.headers.get("x-machine-uid"))


async def viewer_socket(websocket: WebSocket) -> None:
    ctx = _context(websocket)
    origin = websocket.headers.get("origin")
    if origin is not None and not origin_allowed(origin, websocket.scope, ctx.settings):
        await websocket.close(code=1008)  # before accept: the upgrade is refused with 403
        return
    await websocket.accept()
    await serve_viewer(StarletteTransport(websocket), ctx.registry, _verifier(ctx.tokens),
                       client_ip=client_ip(websocket.scope, ctx.settings),
                       session_hint=websocket.query_params.get("session_id") or None)


def routes() -> list[WebSocketRoute]:
    return [WebSocketRoute("/ws/agent", agent_socket), WebSocketRoute("/ws/viewer", viewer_socket)]

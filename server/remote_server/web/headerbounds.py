"""Requests with more header fields than :data:`~.serving.MAX_HEADER_FIELDS` are refused.

uvicorn's h11 bounds the bytes of a request's head (431 past them, :mod:`.serving`); this
bounds how many fields it holds, before any route reads them: an HTTP request gets a 431
problem, a WebSocket handshake is refused.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from .problem import problem_response
from .serving import MAX_HEADER_FIELDS

__all__ = ["HeaderBounds"]


class HeaderBounds:
    """ASGI middleware: at most :data:`MAX_HEADER_FIELDS` header fields a request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and len(scope["headers"]) > MAX_HEADER_FIELDS:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            response = problem_response(
                431, f"more than {MAX_HEADER_FIELDS} header fields",
                headers={"Connection": "close"})
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

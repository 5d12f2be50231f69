"""Request heads past :data:`~.serving.MAX_HEADER_BYTES` or with more header fields than
:data:`~.serving.MAX_HEADER_FIELDS` are refused before any route reads them: an HTTP
request gets a 431 problem, a WebSocket handshake is refused.

uvicorn's h11 stops reading a head that grows past the byte bound while it arrives
(:mod:`.serving`), but one that arrives whole in a single read is parsed before that
check: the exact bound is kept here.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from .problem import problem_response
from .serving import MAX_HEADER_BYTES, MAX_HEADER_FIELDS

__all__ = ["HeaderBounds"]


class HeaderBounds:
    """ASGI middleware: at most :data:`MAX_HEADER_FIELDS` header fields a request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            refusal = _refusal(scope)
            if refusal is not None:
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                response = problem_response(431, refusal, headers={"Connection": "close"})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _refusal(scope: Scope) -> str | None:
    headers = scope["headers"]
    if len(headers) > MAX_HEADER_FIELDS:
        return f"more than {MAX_HEADER_FIELDS} header fields"
    size = (len(scope.get("method", "GET")) + len(scope.get("raw_path") or b"")
            + len(scope.get("query_string", b"")) + sum(len(k) + len(v) + 4 for k, v in headers))
    if size > MAX_HEADER_BYTES:
        return f"the request line and headers pass {MAX_HEADER_BYTES // 1024} KiB"
    return None

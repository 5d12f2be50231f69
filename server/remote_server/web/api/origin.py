"""``POST /api/viewer-origin``: the viewer socket's ``Origin`` decision, readable by a page.

A browser cannot read the 403 that refuses a WebSocket upgrade: the page only
sees close code 1006 and would reconnect forever. Browsers send ``Origin`` on
every POST, same-origin ones included, so this answers, for the headers of
this very request, what ``/ws/viewer`` decides, and the viewer can say
"refused by the server (origin)" and name the setting that fixes it. Public
and bodiless; it reads no state and a refusal is logged once per origin.
"""

from __future__ import annotations

from ..origin import PUBLIC_ORIGINS_SETTING, check_origin
from . import schemas as s
from .endpoint import Call, Endpoint

__all__ = ["ENDPOINTS"]


async def viewer_origin(call: Call) -> s.ViewerOriginOut:
    origin = call.request.headers.get("origin")
    allowed = check_origin(origin, call.request.scope, call.ctx.settings)
    return s.ViewerOriginOut(origin=origin, allowed=allowed, setting=PUBLIC_ORIGINS_SETTING)


ENDPOINTS = [
    Endpoint("POST", "/api/viewer-origin", viewer_origin,
             "Whether /ws/viewer accepts this request's Origin: the same decision the "
             "socket makes for these headers (no auth, no body; a browser cannot read the "
             "socket's 403). origin is null when none was sent, which the socket allows",
             access="public", result=s.ViewerOriginOut, tag="console", store=False),
]

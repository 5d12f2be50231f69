"""The operators' HTTP API: one small module per resource, one endpoint table for all.

:func:`routes` serves the table; ``/api/openapi.json`` documents the same table.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from . import (
    auth,
    codes,
    csp,
    events,
    factors,
    health,
    join,
    keys,
    logins,
    machines,
    origin,
    passkeys,
    problems,
    recordings,
    releases,
    sessions,
    signin,
    tenants,
    users,
    webhooks,
)
from .endpoint import Endpoint, route
from .openapi import build_document

__all__ = ["ENDPOINTS", "routes"]

ENDPOINTS: list[Endpoint] = [
    *health.ENDPOINTS,
    *auth.ENDPOINTS,
    *signin.ENDPOINTS,
    *factors.ENDPOINTS,
    *passkeys.ENDPOINTS,
    *logins.ENDPOINTS,
    *users.ENDPOINTS,
    *tenants.ENDPOINTS,
    *machines.ENDPOINTS,
    *keys.ENDPOINTS,
    *sessions.ENDPOINTS,
    *codes.ENDPOINTS,
    *join.ENDPOINTS,
    *releases.ENDPOINTS,
    *events.ENDPOINTS,
    *recordings.ENDPOINTS,
    *webhooks.ENDPOINTS,
    *csp.ENDPOINTS,
    *origin.ENDPOINTS,
    *problems.ENDPOINTS,
]


def routes() -> list[Route]:
    document = build_document(ENDPOINTS)

    async def openapi(_request: Request) -> JSONResponse:
        return JSONResponse(document)

    return [*(route(ep) for ep in ENDPOINTS),
            Route("/api/openapi.json", openapi, methods=["GET"])]

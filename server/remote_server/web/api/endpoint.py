"""One declarative table drives both the routes and the OpenAPI document.

Each :class:`Endpoint` names its handler, who may call it, its body and query
models and the statuses it answers; :func:`route` wraps the handler with
authentication, body and query validation and response rendering, so every
handler starts from a checked :class:`Call`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from remote_core.records import AuditEvent, User, tenant_of

from ...observe.counters import auth_failed
from ..bodies import parse_json, read_body
from ..clientip import client_ip
from ..context import ServerContext
from ..problem import Problem, validation_problem
from ..secondfactor import required_for
from ..tokens import LoginClaims, TokenError
from .paging import Paged, next_link

__all__ = ["Call", "Endpoint", "caller", "route"]

Access = Literal["public", "user", "admin", "global"]
"""Who may call: anyone; a logged-in user; an administrator (of their own tenant, whose
records alone they see); a global administrator (the default tenant's: tenants too)."""
Answer = tuple[int, str] | tuple[int, str, tuple[str, ...]]
"""A status an endpoint may answer besides its success: ``(status, meaning)``, and the
problem types it carries when they are not the status's own (``("username-taken",)``)."""
MAX_BODY_BYTES = 1024 * 1024
JSON_MEDIA_TYPE = "application/json"


@dataclass
class Call:
    """What a handler gets: the request, the server context and the checked inputs."""

    request: Request
    ctx: ServerContext
    user: User | None
    body: Any
    query: Any
    ip: str
    claims: LoginClaims | None = None
    """The caller's login token, on endpoints that require one."""

    def param(self, name: str) -> str:
        return str(self.request.path_params[name])

    @property
    def me(self) -> User:
        """The caller, on endpoints that require one."""
        assert self.user is not None
        return self.user

    @property
    def tenant(self) -> str:
        """The caller's tenant: everything they see and make is its."""
        return tenant_of(self.me.tenant_id)

    async def audit(self, event: AuditEvent) -> None:
        """Record ``event``; one without a tenant is the caller's tenant's (on a public
        endpoint: its machine's, else the default tenant's)."""
        if event.tenant_id is None and self.user is not None:
            event = dataclasses.replace(event, tenant_id=self.tenant)
        await self.ctx.audit.record(event)


Handler = Callable[[Call], Awaitable[Any]]


@dataclass(frozen=True)
class Endpoint:
    """One operation of the HTTP API.

    :param responses: statuses besides the success one, with what they mean (for the
        document); those every endpoint of its kind answers are added there.
    :param result: the success body's model (``list[Model]`` allowed); ``None`` = no body.
    :param store: whether it reads or writes the database (so may answer 503).
    :param second_factor: whether a token without a second factor is refused (403
        ``second-factor-required``) when the server requires one of the caller; the
        caller's own account endpoints (enrolment, logout) say False.
    """

    method: str
    path: str
    handler: Handler
    summary: str
    access: Access = "user"
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    result: Any = None
    status: int = 200
    responses: tuple[Answer, ...] = ()
    tag: str = ""
    body_optional: bool = False
    store: bool = True
    second_factor: bool = True


def route(endpoint: Endpoint) -> Route:
    async def handle(request: Request) -> Response:
        ctx: ServerContext = request.app.state.ctx
        user, claims = (await caller(request, ctx) if endpoint.access != "public"
                        else (None, None))
        if endpoint.access == "admin" and not (user and user.is_admin):
            raise Problem(403, "this endpoint is for administrators only")
        if endpoint.access == "global" and not (user and user.is_global_admin):
            raise Problem(403, "this endpoint is for global administrators only (the "
                               "default tenant's)")
        if (endpoint.second_factor and user is not None and claims is not None
                and not claims.second_factor and required_for(ctx.settings, user)):
            raise Problem(403, "this server requires a second factor of this account: enrol "
                               "one and log in with it", kind="second-factor-required")
        query = _query(request, endpoint)
        body = await _body(request, endpoint) if endpoint.body else None
        call = Call(request, ctx, user, body, query, client_ip(request.scope, ctx.settings),
                    claims)
        response = _render(request, await endpoint.handler(call), endpoint.status)
        # Answers carry accounts, keys shown once and live state: no cache keeps them.
        response.headers.setdefault("cache-control", "no-store")
        return response

    return Route(endpoint.path, handle, methods=[endpoint.method],
                 name=f"{endpoint.handler.__module__}.{endpoint.handler.__name__}")


async def caller(request: Request, ctx: ServerContext) -> tuple[User, LoginClaims]:
    """The user behind ``Authorization: Bearer``; 401 unless it is a live login token (of
    the user's current password and token generation, read from the store on each request
    so a revocation holds on every node at once)."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Problem.unauthorized("a bearer login token is required")
    try:
        claims = ctx.tokens.verify_login(token.strip())
    except TokenError as exc:
        auth_failed("login_token")
        raise Problem.unauthorized(str(exc)) from None
    user = await ctx.store.get_user(claims.user_id)
    if user is None or user.disabled or claims.password_version != user.password_fingerprint:
        auth_failed("login_token")
        raise Problem.unauthorized("token is no longer valid for this account")
    factors = await ctx.store.get_second_factors(user.id)
    if claims.generation != factors.token_generation:
        auth_failed("login_token")
        raise Problem.unauthorized("token was revoked (logout, or the account's sessions "
                                   "were ended)")
    login = await ctx.store.get_login_session(claims.token_id) if claims.token_id else None
    if login is None or login.user_id != user.id:
        auth_failed("login_token")
        raise Problem.unauthorized("token was revoked (its login session was ended)")
    return user, claims


def _query(request: Request, endpoint: Endpoint) -> Any:
    """The query parameters as the endpoint's model; a parameter it does not take, or one
    given twice, is a 422 naming it (a mistyped filter must not widen a list)."""
    known = endpoint.query.model_fields if endpoint.query is not None else {}
    seen: set[str] = set()
    for name, _ in request.query_params.multi_items():
        if name not in known:
            raise _query_problem(name, "unknown query parameter")
        if name in seen:
            raise _query_problem(name, "given more than once")
        seen.add(name)
    if endpoint.query is None:
        return None
    return _parse(endpoint.query, dict(request.query_params), "query")


def _query_problem(name: str, message: str) -> Problem:
    shown = name if len(name) <= 64 and name.isprintable() else repr(name[:64])
    return Problem(422, f"query parameter '{shown}': {message}",
                   extra={"errors": [{"field": shown, "message": message}]})


def _parse(model: type[BaseModel], data: Any, source: str) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise validation_problem(exc, source) from None


async def _body(request: Request, endpoint: Endpoint) -> Any:
    assert endpoint.body is not None
    ctx: ServerContext = request.app.state.ctx
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type and media_type != JSON_MEDIA_TYPE:  # refused before it is read
        raise _unsupported(media_type)
    raw = await read_body(request, MAX_BODY_BYTES, ctx.settings.request_body_timeout)
    if not raw:  # no body at all; white space alone is a body that is not JSON
        if endpoint.body_optional:
            return endpoint.body()
        raise Problem(400, "a JSON request body is required")
    if not media_type:
        raise _unsupported("missing")
    data = parse_json(raw)
    if not isinstance(data, dict):
        raise Problem(422, "body field 'body': expected a JSON object")
    return _parse(endpoint.body, data, "body")


def _unsupported(media_type: str) -> Problem:
    shown = media_type[:64] if media_type.isprintable() else repr(media_type[:64])
    # The body may be unread: the connection closes after the answer.
    return Problem(415, f"the body must be sent as {JSON_MEDIA_TYPE} (Content-Type was {shown})",
                   headers={"Connection": "close"})


def _render(request: Request, result: Any, status: int) -> Response:
    if isinstance(result, Response):
        return result
    if isinstance(result, Paged):
        response = _render(request, result.items, status)
        if result.cursor is not None:
            response.headers["Link"] = next_link(request, result.cursor)
        return response
    if result is None:
        return Response(status_code=204 if status == 200 else status)
    if isinstance(result, BaseModel):
        result = result.model_dump(mode="json")
    elif isinstance(result, list):
        result = [r.model_dump(mode="json") if isinstance(r, BaseModel) else r for r in result]
    return JSONResponse(result, status_code=status)

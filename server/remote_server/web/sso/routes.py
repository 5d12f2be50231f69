"""Single sign-on's routes under ``/auth/oidc``: start, the provider's callback, the console's
exchange of a one-time code for its login token.

No token travels in a URL: the callback hands the console a one-time code (valid
:data:`HANDOFF_SECONDS`) in the address's fragment, which the browser never sends; the
console trades it for the same login token a password login answers.
"""

from __future__ import annotations

import html
import logging
import secrets
import uuid
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from remote_core.errors import ConflictError
from remote_core.records import DEFAULT_TENANT_ID, AuditEvent, User, tenant_of, utcnow

from ...observe.counters import auth_failed
from ...settings import ServerSettings
from ..api.auth import KNOWN_ADDRESSES_PER_USER
from ..bodies import parse_json, read_body
from ..clientip import client_ip
from ..context import ServerContext
from ..logins import open_login
from ..problem import Problem
from ..users import hash_password, tenant_disabled
from .config import START_PATH, OidcConfig
from .mapping import Grant, grant_for
from .pending import OneTime
from .provider import OidcError, Provider, pkce_pair

__all__ = ["COOKIE", "routes"]

log = logging.getLogger(__name__)

LOGIN_SECONDS = 600
"""How long a started login may take at the provider."""
HANDOFF_SECONDS = 60
"""How long the console has to trade its one-time code for the token."""
COOKIE = "remote_support_oidc"
"""Binds a callback to the browser that started the login (against login CSRF)."""
PAGE_CSP = ("default-src 'none'; img-src data:; base-uri 'none'; form-action 'none'; "
            "frame-ancestors 'none'")


@dataclass(frozen=True)
class _Started:
    verifier: str
    nonce: str


class _Refused(Exception):
    """A login that ends on the refusal page; ``reason`` goes to the audit row."""

    def __init__(self, message: str, reason: str, username: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason
        self.username = username


class OidcLogin:
    """The plugin's state: the provider, logins under way, tokens waiting for pickup."""

    def __init__(self, config: OidcConfig) -> None:
        self.config = config
        self.provider = Provider(config)
        self.started: OneTime[_Started] = OneTime(LOGIN_SECONDS)
        self.handoff: OneTime[tuple[str, int]] = OneTime(HANDOFF_SECONDS)

    async def start(self, request: Request) -> Response:
        ctx = _ctx(request)
        ip = client_ip(request.scope, ctx.settings)
        wait = await ctx.limiter.check_login(ip)  # an SSO login counts like a password one
        if wait is not None:
            raise Problem.rate_limited(wait, "too many login attempts; try again later")
        verifier, challenge = pkce_pair()
        nonce = secrets.token_urlsafe(32)
        state = self.started.put(_Started(verifier, nonce))
        try:
            url = await self.provider.authorization_url(state, nonce, challenge)
        except OidcError as exc:
            log.warning("single sign-on cannot start: %s", exc)
            raise Problem(502, "the identity provider cannot be reached; try again later, "
                               "or log in with a local account") from None
        response = RedirectResponse(url, status_code=303)
        response.set_cookie(COOKIE, state, max_age=LOGIN_SECONDS, path="/auth/oidc",
                            httponly=True, samesite="lax",
                            secure=self.config.redirect_url.startswith("https:"))
        response.headers["cache-control"] = "no-store"
        return response

    async def callback(self, request: Request) -> Response:
        ctx = _ctx(request)
        ip = client_ip(request.scope, ctx.settings)
        try:
            user, methods = await self._finish(request, ctx)
        except _Refused as refused:
            auth_failed("oidc")
            await ctx.audit.record(AuditEvent(
                kind="auth.login_failed", target=refused.username[:200], client_ip=ip,
                detail={"method": "oidc", "reason": refused.reason}))
            return _page(403, "Sign-in refused", refused.message)
        await ctx.store.record_login_address(user.id, ip, KNOWN_ADDRESSES_PER_USER)
        await ctx.audit.record(AuditEvent(kind="auth.login", actor=user.username,
                                          target=user.id, client_ip=ip,
                                          detail={"method": "oidc", "amr": methods}))
        token = await open_login(ctx, user, methods, client_ip=ip,
                                 user_agent=request.headers.get("user-agent", ""))
        code = self.handoff.put((token, ctx.tokens.login_ttl))
        response = RedirectResponse(f"{self.config.console_url}#sso={code}", status_code=303)
        response.delete_cookie(COOKIE, path="/auth/oidc")
        response.headers["cache-control"] = "no-store"
        return response

    async def exchange(self, request: Request) -> Response:
        ctx = _ctx(request)
        raw = await read_body(request, 4096, ctx.settings.request_body_timeout)
        data = parse_json(raw) if raw else None
        code = data.get("code") if isinstance(data, dict) else None
        if not isinstance(code, str) or not code:
            raise Problem(422, "body field 'code': the one-time sign-in code is required")
        taken = self.handoff.take(code)
        if taken is None:
            auth_failed("oidc")
            raise Problem.unauthorized("the sign-in code is unknown, used or expired; sign in "
                                       "again")
        token, ttl = taken
        return JSONResponse({"access_token": token, "token_type": "bearer", "expires_in": ttl},
                            headers={"cache-control": "no-store"})

    async def _finish(self, request: Request, ctx: ServerContext) -> tuple[User, list[str]]:
        """The account this callback logs in and the login's ``amr`` methods, or
        :class:`_Refused` saying why not."""
        params = request.query_params
        state = params.get("state", "")
        cookie = request.cookies.get(COOKIE, "")
        if not state or not cookie or not secrets.compare_digest(state, cookie):
            raise _Refused("This sign-in was not started from this browser, or it took too "
                           "long. Start again from the console.", "state mismatch")
        started = self.started.take(state)
        if started is None:
            raise _Refused("This sign-in expired or was already used. Start again from the "
                           "console.", "unknown state")
        if "error" in params:
            raise _Refused("The identity provider did not sign you in.",
                           f"provider error {params.get('error', '')[:64]!r}")
        code = params.get("code", "")
        if not code:
            raise _Refused("The identity provider sent no authorization code.", "no code")
        try:
            tokens = await self.provider.exchange(code, started.verifier)
            claims = await self.provider.claims(tokens, started.nonce)
        except OidcError as exc:
            log.warning("single sign-on refused: %s", exc)
            raise _Refused("The identity provider's answer could not be verified.",
                           str(exc)) from None
        return await self._account(ctx, claims), sign_in_methods(claims)

    async def _account(self, ctx: ServerContext, claims: dict[str, Any]) -> User:
        username = claims.get(self.config.username_claim)
        if not isinstance(username, str) or not username.strip() or len(username) > 64:
            raise _Refused(f"Your identity carries no usable '{self.config.username_claim}'.",
                           "no username claim")
        groups = claims.get(self.config.groups_claim) or []
        if isinstance(groups, str):
            groups = [groups]
        grant = grant_for(self.config, [str(g) for g in groups if isinstance(g, str)])
        if grant is None:
            raise _Refused("Your account at the identity provider is in no group allowed "
                           "to use this console. Ask an administrator.",
                           "no mapped group", username)
        tenant_id = await _tenant_of(ctx, grant, username)
        user = await ctx.store.get_user_by_username(username)
        if user is None:
            if not self.config.create_users:
                raise _Refused(f"There is no account named {username!r} here, and accounts "
                               "are not created on first sign-in. Ask an administrator.",
                               "unknown user", username)
            user = await _create(ctx, username, grant, tenant_id)
            await ctx.audit.record(AuditEvent(kind="user.created", actor=username,
                                              target=user.id, tenant_id=tenant_id,
                                              detail={"method": "oidc", "role": user.role}))
        if tenant_of(user.tenant_id) != tenant_id:
            raise _Refused("This account is another tenant's than your groups at the identity "
                           "provider name. Ask an administrator.", "another tenant", username)
        if user.disabled:
            raise _Refused("This account is disabled.", "disabled", username)
        if await tenant_disabled(ctx.store, user):
            raise _Refused("This account's tenant is disabled.", "tenant disabled", username)
        if user.is_admin and grant.role != "admin":
            # The provider's groups bound what a sign-in may reach: a user the mapping
            # makes a technician never signs in to an administrator's account that
            # happens to bear the same name (a local break-glass admin included).
            raise _Refused("This account is an administrator's, and your groups at the "
                           "identity provider do not make you one. Ask an administrator.",
                           "role above the mapped groups", username)
        return user


PROVIDER_MULTI_FACTOR = frozenset({"mfa", "otp", "hwk", "swk", "sms", "sc"})
"""RFC 8176 ``amr`` values by which the provider says it checked more than a password."""


def sign_in_methods(claims: dict[str, Any]) -> list[str]:
    """The login's ``amr``: ``fed`` (a federated sign-in), and ``mfa`` when the provider's
    own ``amr`` shows a second factor, which then meets ``REQUIRE_SECOND_FACTOR``."""
    theirs = claims.get("amr")
    proved = isinstance(theirs, list) and bool(PROVIDER_MULTI_FACTOR & {str(m) for m in theirs})
    return ["fed", "mfa"] if proved else ["fed"]


async def _tenant_of(ctx: ServerContext, grant: Grant, username: str) -> str:
    """The tenant the groups map to (``oidc_group_tenants``): the default tenant when
    they name none; refused when they name two, or one that does not exist."""
    if not grant.tenants:
        return DEFAULT_TENANT_ID
    if len(grant.tenants) > 1:
        raise _Refused("Your groups at the identity provider place you in more than one "
                       "tenant. Ask an administrator.", "several tenants", username)
    (name,) = grant.tenants
    found = next((t for t in await ctx.store.list_tenants() if t.name == name), None)
    if found is None:
        raise _Refused(f"Your groups place you in tenant {name!r}, which this server does "
                       "not have. Ask an administrator.", "no such tenant", username)
    return found.id


async def _create(ctx: ServerContext, username: str, grant: Grant, tenant_id: str) -> User:
    """A just-in-time account; its password is random and never shown (SSO only)."""
    user = User(id=str(uuid.uuid4()), username=username,
                password_hash=await hash_password(secrets.token_urlsafe(32)),
                role="admin" if grant.role == "admin" else "technician",
                permissions=grant.permissions, client_access=grant.client_access,
                created_at=utcnow(), tenant_id=tenant_id)
    try:
        return await ctx.store.create_user(user)
    except ConflictError:  # created by a concurrent sign-in meanwhile
        found = await ctx.store.get_user_by_username(username)
        if found is None:
            raise
        return found


def _ctx(request: Request) -> ServerContext:
    ctx: ServerContext = request.app.state.ctx
    return ctx


def _page(status: int, title: str, message: str) -> HTMLResponse:
    body = (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<link rel=\"icon\" href=\"data:,\"><title>{html.escape(title)}</title>"
            f"</head><body><main>"
            f"<h1>{html.escape(title)}</h1><p id=\"reason\">{html.escape(message)}</p>"
            f"<p><a href=\"/console/\">Back to the console</a></p></main></body></html>")
    return HTMLResponse(body, status_code=status,
                        headers={"content-security-policy": PAGE_CSP,
                                 "cache-control": "no-store"})


def routes(settings: ServerSettings) -> list[Route]:
    """The routes under ``/auth/oidc``; none while single sign-on is off."""
    config = OidcConfig.from_settings(settings)
    if config is None:
        return []
    login = OidcLogin(config)
    return [
        Route(START_PATH, login.start, methods=["GET"]),
        Route("/auth/oidc/callback", login.callback, methods=["GET"]),
        Route("/auth/oidc/exchange", login.exchange, methods=["POST"]),
    ]

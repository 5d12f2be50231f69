"""Login, change of password and "who am I" (CONTRACT 2), with their rate limits (SPEC 8)
and the per-account guard against distributed guessing (T06)."""

from __future__ import annotations

from remote_core.records import AuditEvent, Passkey, User, tenant_of

from ...observe.counters import auth_failed, rate_limited
from ..logins import open_login
from ..passkeys import check_assertion, login_options, relying_party
from ..problem import Problem
from ..ratelimit import RateLimiter
from ..secondfactor import check_code
from ..users import authenticate, check_password, hash_password, tenant_disabled
from . import schemas as s
from .endpoint import Call, Endpoint
from .views import user_out

__all__ = ["ENDPOINTS"]


KNOWN_ADDRESSES_PER_USER = 10
"""Addresses of successful logins kept per user: they may still log in under a guard."""


async def _guarded_out(call: Call, username: str) -> float | None:
    """Seconds to wait when ``username``'s guard is up and this address is not one the
    account has logged in from; the password is then not even checked."""
    guard = await call.ctx.limiter.account_guard_for(username)
    if guard is None:
        return None
    user = await call.ctx.store.get_user_by_username(username)
    if user is not None and await call.ctx.store.is_login_address(user.id, call.ip):
        return None
    return guard


async def _failed(call: Call, username: str, kind: str) -> None:
    """Count a failed login toward the account's guard (the per-IP limit counted it)."""
    auth_failed(kind)
    await call.audit(AuditEvent(kind="auth.login_failed", target=username,
                                client_ip=call.ip,
                                detail={"factor": kind} if kind != "password"
                                else {}))
    if await call.ctx.limiter.record_account_failure(username):
        await call.audit(AuditEvent(
            kind="auth.account_guarded", target=username, client_ip=call.ip,
            detail={"failures": RateLimiter.ACCOUNT_FAILURES_BEFORE_GUARD,
                    "window_seconds": RateLimiter.ACCOUNT_FAILURE_WINDOW,
                    "guard_seconds": RateLimiter.ACCOUNT_GUARD_SECONDS}))


async def _second_factor(call: Call, user: User, body: s.LoginIn) -> list[str]:
    """The ``amr`` methods of this login; raises when the account's second factor is
    missing (401 ``second-factor-needed``, with a passkey challenge when the account has
    passkeys) or wrong (401 ``bad-second-factor``, counted)."""
    factors = await call.ctx.store.get_second_factors(user.id)
    keys = await call.ctx.store.list_passkeys(user.id)
    if factors.totp_secret is None and not keys:
        return ["pwd"]
    if body.otp is None and body.recovery_code is None and body.passkey is None:
        raise await _needed(call, user, factors.totp_secret is not None, keys)
    if body.otp is not None or body.recovery_code is not None:
        method = await check_code(call.ctx.store, factors, otp=body.otp,
                                  recovery_code=None if body.otp is not None
                                  else body.recovery_code)
    else:
        assert body.passkey is not None
        method = None
        try:
            rp = relying_party(call.ctx.settings, call.request.scope)
        except Problem:
            pass  # reached at an address: no passkey can have answered a challenge here
        else:
            assertion = body.passkey.model_dump(mode="json", exclude_none=True)
            if await check_assertion(call.ctx.store, user, rp, assertion):
                method = "hwk"
    if method is None:
        await _failed(call, body.username, "second_factor")
        raise Problem.unauthorized("wrong second factor", kind="bad-second-factor")
    if body.recovery_code is not None and body.otp is None:
        await call.audit(AuditEvent(
            kind="auth.recovery_code_used", actor=user.username, target=user.id,
            client_ip=call.ip, detail={"left": len(factors.recovery_hashes) - 1},
            tenant_id=tenant_of(user.tenant_id)))
    return ["pwd", method]


async def _needed(call: Call, user: User, totp: bool, keys: list[Passkey]) -> Problem:
    """401 ``second-factor-needed``: which methods the account has, and for passkeys the
    options (a fresh challenge) to answer with ``navigator.credentials.get``, unless the
    server was reached where passkeys cannot work (an IP address: the detail says so)."""
    methods = (["otp", "recovery_code"] if totp else []) + (["passkey"] if keys else [])
    extra: dict[str, object] = {"methods": methods}
    detail = "this account needs its second factor: send " + " or ".join(
        (["the TOTP code as otp, a recovery code as recovery_code"] if totp else [])
        + (["a passkey's answer to passkey_options as passkey"] if keys else []))
    if keys:
        try:
            rp = relying_party(call.ctx.settings, call.request.scope)
        except Problem as unavailable:  # no passkey_options: say why
            detail += f" ({unavailable.detail})"
        else:
            extra["passkey_options"] = await login_options(call.ctx.store, user, rp, keys)
    return Problem(401, detail, kind="second-factor-needed", extra=extra)


async def login(call: Call) -> s.TokenOut:
    body: s.LoginIn = call.body
    limiter = call.ctx.limiter
    wait = await limiter.check_login(call.ip)
    if wait is not None:
        raise Problem.rate_limited(wait, "too many login attempts; try again later")
    wait = await _guarded_out(call, body.username)
    if wait is not None:
        rate_limited("login_account", wait)
        raise Problem.rate_limited(wait, "too many failed logins to this account; try "
                                         "again later, or from where you logged in before")
    user = await authenticate(call.ctx.store, body.username, body.password)
    if user is None:
        await _failed(call, body.username, "password")
        raise Problem.unauthorized("wrong username or password", kind="bad-credentials")
    methods = await _second_factor(call, user, body)
    if await tenant_disabled(call.ctx.store, user):
        raise Problem.unauthorized("this account's tenant is disabled", kind="bad-credentials")
    await call.ctx.store.record_login_address(user.id, call.ip, KNOWN_ADDRESSES_PER_USER)
    await call.audit(AuditEvent(kind="auth.login", actor=user.username, target=user.id,
                                client_ip=call.ip, detail={"amr": methods},
                                tenant_id=tenant_of(user.tenant_id)))
    token = await open_login(call.ctx, user, methods, client_ip=call.ip,
                             user_agent=call.request.headers.get("user-agent", ""))
    return s.TokenOut(access_token=token, expires_in=call.ctx.tokens.login_ttl)


async def change_password(call: Call) -> None:
    body: s.ChangePasswordIn = call.body
    wait = await call.ctx.limiter.check_change_password(call.ip)
    if wait is not None:
        raise Problem.rate_limited(wait, "too many password changes; try again later")
    if not await check_password(call.me.password_hash, body.current_password):
        await call.audit(AuditEvent(kind="auth.change_password_failed",
                                    actor=call.me.username, client_ip=call.ip))
        raise Problem(403, "the current password is wrong", kind="wrong-password")
    await call.ctx.store.update_user(call.me.id,
                                     password_hash=await hash_password(body.new_password))
    await call.audit(AuditEvent(kind="auth.password_changed", actor=call.me.username,
                                target=call.me.id, client_ip=call.ip))
    await call.ctx.directory.user_changed(call.me.id, password_changed=True)


async def me(call: Call) -> s.MeOut:
    out = user_out(call.me)
    return s.MeOut(**out.model_dump(include=set(s.MeOut.model_fields)))


ENDPOINTS = [
    Endpoint("POST", "/api/auth/login", login,
             "Log in; answers a login token (8 attempts/min/IP, successful ones included; "
             "after 20 failed logins or second factors to one account within 15 min, for "
             "15 min only from addresses it logged in from before). An account with a "
             "second factor sends with the password its TOTP code (otp), a recovery code, or "
             "a passkey's answer (passkey) to the passkey_options its second-factor-needed "
             "problem carries",
             access="public", body=s.LoginIn, result=s.TokenOut, tag="auth",
             responses=((401, "wrong username or password, a second factor needed or wrong",
                         ("bad-credentials", "second-factor-needed", "bad-second-factor")),
                        (429, "rate limit, or the account's guard against distributed "
                              "guessing"))),
    Endpoint("POST", "/api/auth/change-password", change_password,
             "Change the caller's password (5/min/IP); older tokens stop working",
             body=s.ChangePasswordIn, status=204, tag="auth", second_factor=False,
             responses=((403, "the current password is wrong", ("wrong-password",)),
                        (429, "rate limit"))),
    Endpoint("GET", "/api/auth/me", me, "The caller's account", result=s.MeOut, tag="auth",
             second_factor=False),
]

"""The caller's passkeys (WebAuthn): registration options, registering one, listing and
removing them. Logging in with one is login's second step (:mod:`.auth`)."""

from __future__ import annotations

from remote_core.errors import ConflictError
from remote_core.records import AuditEvent, Passkey

from ..logins import open_login
from ..passkeys import register, registration_options, relying_party
from ..problem import Problem
from ..tokens import SECOND_FACTOR_METHODS
from . import schemas as s
from .endpoint import Call, Endpoint

__all__ = ["ENDPOINTS"]

_UNAVAILABLE = (409, "passkeys are unavailable at the address the server was reached at",
                ("passkeys-unavailable",))
MAX_PASSKEYS = 10
"""Passkeys one account may hold: enough for every device a person has, and a bound on
what a list of them returns and on what one stolen login can add."""
_FULL_SAYS = f"the account holds {MAX_PASSKEYS} passkeys already: remove one first"
_FULL = (409, _FULL_SAYS, ("passkey-limit",))


def passkey_out(passkey: Passkey) -> s.PasskeyOut:
    return s.PasskeyOut(id=passkey.id, name=passkey.name, created_at=passkey.created_at,
                        last_used_at=passkey.last_used_at, transports=list(passkey.transports))


async def _may_add(call: Call) -> None:
    """An account that has a second factor adds another only from a login that proved one
    (a password-only token, say a single sign-on's, cannot add its own), and holds at
    most :data:`MAX_PASSKEYS`."""
    held = await call.ctx.store.list_passkeys(call.me.id)
    factors = await call.ctx.store.get_second_factors(call.me.id)
    has_second_factor = factors.totp_secret is not None or bool(held)
    if has_second_factor and not (call.claims and call.claims.second_factor):
        raise Problem(403, "this account has a second factor: log in with it to add a "
                           "passkey", kind="second-factor-required")
    if len(held) >= MAX_PASSKEYS:
        raise Problem(409, _FULL_SAYS, kind="passkey-limit")


async def options(call: Call) -> s.PasskeyOptionsOut:
    await _may_add(call)
    rp = relying_party(call.ctx.settings, call.request.scope)
    return s.PasskeyOptionsOut(options=await registration_options(call.ctx.store, call.me, rp))


async def enrol(call: Call) -> s.PasskeyEnrolledOut:
    body: s.PasskeyEnrolIn = call.body
    await _may_add(call)
    rp = relying_party(call.ctx.settings, call.request.scope)
    try:
        credential = body.credential.model_dump(mode="json", exclude_none=True)
        passkey = await register(call.ctx.store, call.me, rp, credential, body.name)
    except ConflictError:
        raise Problem(409, "this passkey is registered already",
                      kind="passkey-registered") from None
    await call.audit(AuditEvent(
        kind="auth.passkey_added", actor=call.me.username, target=call.me.id,
        client_ip=call.ip, detail={"passkey": passkey.id, "name": passkey.name}))
    # The account's password-only logins end, the calling one included, and a login that
    # carries the passkey takes the calling one's place (as enrolling TOTP does).
    current = call.claims.token_id if call.claims else None
    for login in await call.ctx.store.list_login_sessions(call.me.id):
        if login.id == current or not SECOND_FACTOR_METHODS & set(login.methods):
            await call.ctx.store.end_login_sessions(call.me.id, login.id)
    token = await open_login(call.ctx, call.me, ("pwd", "hwk"), client_ip=call.ip,
                             user_agent=call.request.headers.get("user-agent", ""))
    return s.PasskeyEnrolledOut(access_token=token, expires_in=call.ctx.tokens.login_ttl,
                                passkey=passkey_out(passkey))


async def list_passkeys(call: Call) -> list[s.PasskeyOut]:
    return [passkey_out(p) for p in await call.ctx.store.list_passkeys(call.me.id)]


async def remove(call: Call) -> None:
    passkey_id = call.param("passkey_id")
    if not await call.ctx.store.delete_passkeys(call.me.id, passkey_id):
        raise Problem(404, "no such passkey of yours")
    await call.audit(AuditEvent(
        kind="auth.passkey_removed", actor=call.me.username, target=call.me.id,
        client_ip=call.ip, detail={"passkey": passkey_id}))


_PASSKEYS = "/api/auth/passkeys"
ENDPOINTS = [
    Endpoint("GET", _PASSKEYS, list_passkeys, "The caller's passkeys, oldest first",
             result=list[s.PasskeyOut], tag="auth", second_factor=False),
    Endpoint("POST", _PASSKEYS + "/options", options,
             "Options for registering a passkey (navigator.credentials.create); their "
             "challenge works once, for this account, within their timeout. An account with "
             "a second factor asks with a token that carries it",
             result=s.PasskeyOptionsOut, tag="auth", second_factor=False,
             responses=(_UNAVAILABLE, _FULL,
                        (403, "the account has a second factor and this token does not "
                              "carry it", ("second-factor-required",)))),
    Endpoint("POST", _PASSKEYS, enrol,
             "Register a passkey with the browser's answer to the options; answers a token "
             "that carries it (amr hwk), and the account's password-only logins end, the "
             "calling one included",
             body=s.PasskeyEnrolIn, result=s.PasskeyEnrolledOut, status=201, tag="auth",
             second_factor=False,
             responses=(_UNAVAILABLE,
                        (409, "the passkey is registered already", ("passkey-registered",)),
                        _FULL,
                        (403, "the account has a second factor and this token does not "
                              "carry it", ("second-factor-required",)))),
    Endpoint("DELETE", _PASSKEYS + "/{passkey_id}", remove,
             "Remove one of the caller's passkeys", status=204, tag="auth",
             responses=((404, "no such passkey of the caller"),)),
]

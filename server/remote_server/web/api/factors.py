"""The caller's second factor (TOTP with recovery codes) and logout; an administrator's
reset of another account's second factor (TOTP and passkeys). A reset or logout ends every
token of the account at once (:mod:`..revocation`)."""

from __future__ import annotations

from remote_core.records import AuditEvent, tenant_of

from .. import totp
from ..logins import open_login
from ..problem import Problem
from ..revocation import revoke_tokens
from ..secondfactor import new_recovery_codes, required_for
from ..users import check_password
from . import schemas as s
from .endpoint import Call, Endpoint
from .users import find_user

__all__ = ["ENDPOINTS"]


async def status(call: Call) -> s.SecondFactorOut:
    factors = await call.ctx.store.get_second_factors(call.me.id)
    return s.SecondFactorOut(
        totp_enrolled=factors.totp_secret is not None,
        passkeys=len(await call.ctx.store.list_passkeys(call.me.id)),
        required=required_for(call.ctx.settings, call.me),
        token_has_second_factor=bool(call.claims and call.claims.second_factor),
        recovery_codes_left=len(factors.recovery_hashes) if factors.totp_secret else 0)


async def new_secret(call: Call) -> s.TotpSecretOut:
    secret = totp.new_secret()
    return s.TotpSecretOut(secret=secret,
                           otpauth_uri=totp.provisioning_uri(secret, call.me.username))


async def enrol(call: Call) -> s.TotpEnrolledOut:
    body: s.TotpEnrolIn = call.body
    factors = await call.ctx.store.get_second_factors(call.me.id)
    if factors.totp_secret is not None:
        raise Problem(409, "this account has TOTP already; reset it first",
                      kind="second-factor-enrolled")
    step = totp.verify(body.secret, body.code)
    if step is None:
        raise Problem(422, "body field 'code': not the current code of this secret (check "
                           "the authenticator's clock)",
                      extra={"errors": [{"field": "code", "message": "wrong code"}]})
    codes, hashes = await new_recovery_codes()
    await call.ctx.store.set_totp(call.me.id, body.secret, hashes)
    await call.ctx.store.use_totp_step(call.me.id, step)  # the code confirmed works no more
    await call.audit(AuditEvent(kind="auth.totp_enrolled", actor=call.me.username,
                                target=call.me.id, client_ip=call.ip))
    # Every login of the account so far is password-only: they end, and a new one with
    # the second factor takes the enrolling login's place.
    await call.ctx.store.end_login_sessions(call.me.id)
    token = await open_login(call.ctx, call.me, ("pwd", "otp"), client_ip=call.ip,
                             user_agent=call.request.headers.get("user-agent", ""))
    return s.TotpEnrolledOut(access_token=token, expires_in=call.ctx.tokens.login_ttl,
                             recovery_codes=codes)


async def reset_own(call: Call) -> None:
    body: s.PasswordIn = call.body
    if not await check_password(call.me.password_hash, body.password):
        raise Problem(403, "the password is wrong", kind="wrong-password")
    await call.ctx.store.set_totp(call.me.id, None)
    await call.audit(AuditEvent(kind="auth.totp_reset", actor=call.me.username,
                                target=call.me.id, client_ip=call.ip))
    await revoke_tokens(call.ctx, call.me, "the user's second factor was reset",
                        client_ip=call.ip)


async def reset_other(call: Call) -> None:
    user = await find_user(call)
    await call.ctx.store.set_totp(user.id, None)
    passkeys = await call.ctx.store.delete_passkeys(user.id)
    await call.audit(AuditEvent(kind="auth.totp_reset", actor=call.me.username,
                                target=user.id, client_ip=call.ip,
                                detail={"passkeys_removed": passkeys},
                                tenant_id=tenant_of(user.tenant_id)))
    await revoke_tokens(call.ctx, user, "the user's second factor was reset",
                        actor=call.me.username, client_ip=call.ip)


async def logout(call: Call) -> None:
    await revoke_tokens(call.ctx, call.me, "the user logged out", client_ip=call.ip)


_TOTP = "/api/auth/totp"
ENDPOINTS = [
    Endpoint("POST", "/api/auth/logout", logout,
             "Log out: every login and viewer token of the caller stops working at once "
             "and their live viewers are closed (1008), on every node",
             status=204, tag="auth", second_factor=False),
    Endpoint("GET", "/api/auth/second-factor", status,
             "The caller's second factor: enrolled, required by the server, carried by "
             "this token", result=s.SecondFactorOut, tag="auth", second_factor=False),
    Endpoint("POST", _TOTP + "/secret", new_secret,
             "A fresh TOTP secret and its otpauth:// URI, to show as a QR code; nothing is "
             "stored until it is confirmed with POST /api/auth/totp",
             result=s.TotpSecretOut, tag="auth", second_factor=False),
    Endpoint("POST", _TOTP, enrol,
             "Enrol TOTP with a secret and its current code; answers the recovery codes "
             "(shown once, stored hashed) and a token that carries the second factor. The "
             "account's other logins (password-only) end",
             body=s.TotpEnrolIn, result=s.TotpEnrolledOut, status=201, tag="auth",
             second_factor=False,
             responses=((409, "TOTP is enrolled already", ("second-factor-enrolled",)),)),
    Endpoint("POST", _TOTP + "/reset", reset_own,
             "Remove the caller's TOTP and recovery codes (the password confirms); every "
             "token of the caller stops working",
             body=s.PasswordIn, status=204, tag="auth",
             responses=((403, "the password is wrong", ("wrong-password",)),)),
    Endpoint("DELETE", "/api/users/{user_id}/second-factor", reset_other,
             "Reset a user's second factor (a lost phone or security key): their TOTP, "
             "recovery codes and passkeys are removed, every token of theirs stops working "
             "and their viewers are closed", access="admin", status=204,
             tag="users", responses=((404, "no such user"),)),
]

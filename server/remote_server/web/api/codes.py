"""Support codes (CONTRACT 2): create, list, cancel, and public validation that never consumes."""

from __future__ import annotations

import time
from datetime import timedelta

from remote_core.errors import ConflictError
from remote_core.records import AuditEvent, Keyset, SupportCode, tenant_of, utcnow
from remote_core.supportcode import generate_support_code, masked, normalize_support_code

from ...join_agent import join_agent_file
from ...observe.counters import auth_failed
from ..problem import Problem
from . import schemas as s
from .endpoint import Call, Endpoint
from .paging import Cursors, Paged, collect
from .views import code_out, code_status, created

__all__ = ["ENDPOINTS"]

CURSORS = Cursors("codes")

ATTEMPTS = 5  # a collision among 31**9 codes is rare; five in a row is a broken store


async def create_code(call: Call) -> s.CodeOut:
    body: s.CodeCreateIn = call.body
    if not (call.me.is_admin or "support_codes" in call.me.permissions):
        raise Problem(403, "creating support codes needs the 'support_codes' permission")
    if not call.ctx.plugins.accepts_support_codes():
        loaded = ", ".join(m.name for m in call.ctx.plugins.auth_methods()) or "none"
        raise Problem(501, "no loaded authentication method accepts support codes "
                           f"(loaded methods: {loaded}); load auth_supportcode or a plugin "
                           "whose AuthMethod has accepts_support_codes")
    now = utcnow()
    for _ in range(ATTEMPTS):
        code = SupportCode(code=generate_support_code(), created_by=call.me.id,
                           technician_name=call.me.username, created_at=now,
                           expires_at=now + timedelta(seconds=body.expires_in),
                           tenant_id=call.tenant)
        try:
            stored = await call.ctx.store.create_support_code(code)
        except ConflictError:
            continue
        await call.audit(AuditEvent(
            kind="support_code.created", actor=call.me.username, target=masked(stored.code),
            client_ip=call.ip, detail={"expires_at": stored.expires_at.isoformat()},
            tenant_id=call.tenant))
        return code_out(stored, time.time())
    raise Problem(503, "could not allocate a support code; try again")


async def list_codes(call: Call) -> Paged[s.CodeOut]:
    owner = None if call.me.is_admin else call.me.id

    async def fetch(after: Keyset | None, limit: int) -> list[SupportCode]:
        return await call.ctx.store.list_support_codes(owner, after=after, limit=limit,
                                                       tenant_id=call.tenant)

    page = await collect(fetch, lambda c: Keyset(created(c.created_at), c.code), CURSORS,
                         call.query)
    now = time.time()
    return Paged([code_out(c, now) for c in page.items], page.cursor)


async def cancel_code(call: Call) -> None:
    text = normalize_support_code(call.param("code"))
    code = await call.ctx.store.get_support_code(text) if text else None
    if code is None or tenant_of(code.tenant_id) != call.tenant or not (
            call.me.is_admin or code.created_by == call.me.id):
        raise Problem(404, "no such support code")
    pending = code_status(code, time.time()) == "pending"
    if not pending or not await call.ctx.store.cancel_support_code(code.code):
        raise Problem(409, "only a pending code can be cancelled", kind="code-not-pending")
    await call.audit(AuditEvent(kind="support_code.cancelled", actor=call.me.username,
                                target=masked(code.code), client_ip=call.ip,
                                tenant_id=call.tenant))


async def validate_code(call: Call) -> s.CodeValidOut:
    body: s.CodeValidateIn = call.body
    code = await pending_code(call, body.code)
    return s.CodeValidOut(technician=code.technician_name, expires_at=code.expires_at,
                          organization=call.ctx.settings.join_organization,
                          agent_available=join_agent_file(call.ctx.settings) is not None)


async def pending_code(call: Call, given: str) -> SupportCode:
    """The pending code ``given`` names, counted against the caller's attempt limit and
    lockout; 404 for any other, saying nothing about why."""
    limiter = call.ctx.limiter
    wait = await limiter.check_code_attempt(call.ip)
    if wait is not None:
        raise Problem.rate_limited(wait, "too many support-code attempts; try again later")
    text = normalize_support_code(given)
    code = await call.ctx.store.get_support_code(text) if text else None
    ok = code is not None and code_status(code, time.time()) == "pending"
    if await limiter.record_code_result(call.ip, ok):
        await call.audit(AuditEvent(
            kind="support_code.lockout", client_ip=call.ip,
            detail={"seconds": limiter.CODE_LOCKOUT_SECONDS, "via": "rest"}))
    if not ok or code is None:
        auth_failed("support_code")
        raise Problem(404, "unknown, used or expired support code")
    return code


ENDPOINTS = [
    Endpoint("POST", "/api/codes", create_code, "Create a one-time support code (default 1 h)",
             body=s.CodeCreateIn, body_optional=True, result=s.CodeOut, status=201,
             tag="codes", responses=((403, "no 'support_codes' permission"),
                                     (501, "no loaded authentication method accepts "
                                           "support codes"),
                                     (503, "no unused code found in five tries, or the "
                                           "database is unavailable"))),
    Endpoint("GET", "/api/codes", list_codes, "The caller's support codes, newest first "
             "(admin: everyone's)", query=s.PageQuery, result=list[s.CodeOut], tag="codes"),
    Endpoint("DELETE", "/api/codes/{code}", cancel_code, "Cancel a pending code (owner or "
             "admin)", status=204, tag="codes",
             responses=((404, "no such code"),
                        (409, "the code is not pending", ("code-not-pending",)))),
    Endpoint("POST", "/api/codes/validate", validate_code,
             "Check a code without consuming it (15/min/IP; 10 failures lock the IP out for "
             "15 min)", access="public", body=s.CodeValidateIn, result=s.CodeValidOut,
             tag="codes", responses=((404, "unknown, used or expired"),
                                     (429, "rate limit or lockout"))),
]

"""The caller's own login sessions: list them, end one (a lost laptop). Logout ends all."""

from __future__ import annotations

from remote_core.records import AuditEvent

from ..problem import Problem
from ..tokens import SECOND_FACTOR_METHODS
from . import schemas as s
from .endpoint import Call, Endpoint

__all__ = ["ENDPOINTS"]


async def list_logins(call: Call) -> list[s.LoginSessionOut]:
    current = call.claims.token_id if call.claims else None
    return [s.LoginSessionOut(id=login.id, created_at=login.created_at,
                              expires_at=login.expires_at, client_ip=login.client_ip,
                              user_agent=login.user_agent,
                              second_factor=bool(SECOND_FACTOR_METHODS & set(login.methods)),
                              current=login.id == current)
            for login in await call.ctx.store.list_login_sessions(call.me.id)]


async def end_login(call: Call) -> None:
    session_id = call.param("session_id")
    if not await call.ctx.store.end_login_sessions(call.me.id, session_id):
        raise Problem(404, "no such login session of yours")
    await call.audit(AuditEvent(kind="auth.login_ended", actor=call.me.username,
                                target=call.me.id, client_ip=call.ip,
                                detail={"login_session": session_id}))


ENDPOINTS = [
    Endpoint("GET", "/api/auth/sessions", list_logins,
             "The caller's login sessions, newest first (each login token is one)",
             result=list[s.LoginSessionOut], tag="auth", second_factor=False),
    Endpoint("DELETE", "/api/auth/sessions/{session_id}", end_login,
             "End one of the caller's login sessions: its token stops working at once",
             status=204, tag="auth", second_factor=False,
             responses=((404, "no such login session of the caller"),)),
]

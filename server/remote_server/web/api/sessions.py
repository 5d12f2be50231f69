"""Sessions: list, read, remove (SPEC 3.3) and viewer tokens (SPEC 5.3)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from remote_core.errors import SessionRefused
from remote_core.protocol import Channel
from remote_core.records import AuditEvent, Keyset, SessionRecord

from ...recordings import purge_recordings
from ...relay import NotReady
from ...relay.consent import Standing
from ...relay.rules import can_use, channel_consent_refusal, consent_refusal
from ..problem import Problem
from . import schemas as s
from .endpoint import Call, Endpoint
from .paging import Cursors, Paged, collect
from .views import created, path_id, session_out, visible_machine

if TYPE_CHECKING:
    from ...relay.session import SessionSnapshot

__all__ = ["ENDPOINTS"]

CURSORS = Cursors("sessions")
LIVE_CURSORS = Cursors("live sessions")
ASKING_RETRY_AFTER = "2"
"""Seconds a technician's client waits before asking again while the end user is asked."""


async def _find(call: Call) -> tuple[str, SessionRecord | None]:
    session_id = path_id(call.param("session_id"), "session")
    record = await call.ctx.store.get_session(session_id)
    live = call.ctx.directory.session(session_id)
    if record is None and live is None:
        raise Problem(404, "no such session")
    agent_id, tenant_id = ((record.agent_id, record.tenant_id) if record
                           else (live.agent_id, live.tenant_id))  # type: ignore[union-attr]
    if not await visible_machine(call, agent_id, tenant_id):
        raise Problem(404, "no such session")
    return session_id, record


async def list_sessions(call: Call) -> Paged[s.SessionOut]:
    """Stored sessions newest first, with the live state of those that are live. The first
    page also leads with live sessions whose row is not written yet. ``live=true`` lists
    the relay's live sessions alone, however old."""
    q: s.SessionQuery = call.query
    registry = call.ctx.directory
    allowed: dict[tuple[str, str | None], bool] = {}

    async def visible(agent_id: str, tenant_id: str | None) -> bool:
        if (agent_id, tenant_id) not in allowed:
            allowed[agent_id, tenant_id] = await visible_machine(call, agent_id, tenant_id)
        return allowed[agent_id, tenant_id]

    if q.live:
        return await _live_sessions(call, q, visible)

    async def fetch(after: Keyset | None, limit: int) -> list[SessionRecord]:
        return await call.ctx.store.list_sessions(limit=limit, after=after,
                                                  tenant_id=call.tenant)

    async def keep(record: SessionRecord) -> bool:
        if q.live is False and registry.session(record.id) is not None:
            return False
        return await visible(record.agent_id, record.tenant_id)

    page = await collect(fetch, lambda r: Keyset(created(r.created_at), r.id), CURSORS, q,
                         keep)
    out = [session_out(r, registry.session(r.id)) for r in page.items]
    if q.cursor is None and q.live is None:
        out = [session_out(None, ls) for ls in await _unwritten(call, page.items, visible)
               ] + out
    return Paged(out, page.cursor)


Visible = Callable[[str, str | None], Awaitable[bool]]
"""Whether the caller sees a session of (machine, tenant)."""


async def _live_sessions(call: Call, q: s.SessionQuery, visible: Visible
                         ) -> Paged[s.SessionOut]:
    def key(live: SessionSnapshot) -> Keyset:
        return Keyset(live.created_at, live.session_id)

    ordered = sorted(call.ctx.directory.live_sessions(),
                     key=lambda ls: (ls.created_at, ls.session_id), reverse=True)

    async def fetch(after: Keyset | None, limit: int) -> list[SessionSnapshot]:
        mark = None if after is None else (after.created_at, after.id)
        return [ls for ls in ordered if mark is None or (ls.created_at, ls.session_id) < mark
                ][:limit]

    async def keep(live: SessionSnapshot) -> bool:
        return await visible(live.agent_id, live.tenant_id)

    page = await collect(fetch, key, LIVE_CURSORS, q, keep)
    return Paged([session_out(await call.ctx.store.get_session(ls.session_id), ls)
                  for ls in page.items], page.cursor)


async def _unwritten(call: Call, listed: list[SessionRecord],
                     visible: Visible) -> list[SessionSnapshot]:
    """Live sessions newer than the first page whose row the store does not hold yet (it
    is written behind the session's start, and retried through an outage)."""
    shown = {r.id for r in listed}
    newest = created(listed[0].created_at) if listed else None
    found = []
    for live in call.ctx.directory.live_sessions():
        if live.session_id in shown or (newest is not None and live.created_at < newest):
            continue
        if (await visible(live.agent_id, live.tenant_id)
                and await call.ctx.store.get_session(live.session_id) is None):
            found.append(live)
    return sorted(found, key=lambda ls: ls.created_at, reverse=True)


async def get_session(call: Call) -> s.SessionOut:
    session_id, record = await _find(call)
    return session_out(record, call.ctx.directory.session(session_id))


async def delete_session(call: Call) -> s.SessionRemovalOut:
    q: s.SessionDeleteQuery = call.query
    session_id, record = await _find(call)
    registry = call.ctx.directory
    if q.purge:
        if record is not None:
            await call.ctx.store.soft_delete_session(session_id)
        was_live = await registry.purge_session(session_id)
        await purge_recordings(call.ctx.store, call.ctx.recordings, call.ctx.audit,
                               session_id=session_id, reason="its session was purged",
                               actor=call.me.username, client_ip=call.ip)
    else:
        was_live = await registry.disconnect_session(session_id, "removed by an operator")
    await call.audit(AuditEvent(
        kind="session.purged" if q.purge else "session.disconnected", session_id=session_id,
        agent_id=record.agent_id if record else None, actor=call.me.username,
        target=session_id, client_ip=call.ip, detail={"was_live": was_live},
        tenant_id=call.tenant,
    ))
    action = s.SessionRemovalAction.PURGED if q.purge else s.SessionRemovalAction.DISCONNECTED
    return s.SessionRemovalOut(session_id=session_id, action=action, was_live=was_live)


async def viewer_token(call: Call) -> s.ViewerTokenOut:
    q: s.ViewerTokenQuery = call.query
    if q.backstage and q.file_transfer:
        raise Problem(422, "a viewer token is for a terminal or for files, not both")
    channel = (Channel.TERMINAL if q.backstage else Channel.FILES if q.file_transfer
               else None)
    if channel is not None and not can_use(channel, call.me):
        raise Problem(403, f"{'a backstage terminal' if q.backstage else 'file transfer'} "
                           f"needs the '{channel.value}' permission")
    if channel is None and not (call.me.is_admin or "view" in call.me.permissions):
        raise Problem(403, "viewing needs the 'view' permission")
    session_id, _record = await _find(call)
    live = call.ctx.directory.session(session_id)
    if live is None:
        raise Problem(409, "the session is not live", kind="session-not-live")
    try:
        standing = await call.ctx.directory.admission(session_id, call.me.id,
                                                      channel=channel)
    except NotReady as exc:
        ended = call.ctx.directory.session(session_id) is None
        raise Problem(409, str(exc), kind="session-not-live" if ended else "awaiting-consent",
                      headers={} if ended else {"Retry-After": ASKING_RETRY_AFTER}) from None
    except SessionRefused as exc:
        raise Problem(403, str(exc)) from None
    refusal = (channel_consent_refusal(channel, standing) if channel is not None
               else consent_refusal(standing, live.technician_name))
    if standing is Standing.ASKING:
        raise Problem(409, str(refusal), kind="awaiting-consent",
                      headers={"Retry-After": ASKING_RETRY_AFTER},
                      extra={"consent": standing.value})
    if refusal is not None:
        raise Problem(403, refusal, kind="consent-refused", extra={"consent": standing.value})
    generation = (await call.ctx.store.get_second_factors(call.me.id)).token_generation
    token = call.ctx.tokens.mint_viewer(session_id, call.me, live.tenant_id, generation)
    await call.audit(AuditEvent(kind="viewer.token_issued", session_id=session_id,
                                agent_id=live.agent_id, actor=call.me.username,
                                client_ip=call.ip,
                                detail={channel.value: True} if channel else {},
                                tenant_id=call.tenant))
    return s.ViewerTokenOut(token=token, expires_in=call.ctx.tokens.viewer_ttl,
                            session_id=session_id, node=call.ctx.directory.owner(session_id))


_ONE = "/api/sessions/{session_id}"
_404 = ((404, "no such session"),)

ENDPOINTS = [
    Endpoint("GET", "/api/sessions", list_sessions, "Sessions, newest first, with the live "
             "state of those that are live", query=s.SessionQuery, result=list[s.SessionOut],
             tag="sessions"),
    Endpoint("GET", _ONE, get_session, "Get a session", result=s.SessionOut,
             tag="sessions", responses=_404),
    Endpoint("DELETE", _ONE, delete_session,
             "Remove a session: purge soft-deletes it and forgets the live one; without "
             "purge a live session is disconnected", access="admin",
             query=s.SessionDeleteQuery, result=s.SessionRemovalOut, tag="sessions",
             responses=_404),
    Endpoint("POST", _ONE + "/viewer-token", viewer_token,
             "Mint a 5-minute viewer token bound to this session. On an attended session, "
             "a technician other than the one the end user consented to is asked about: "
             "the first request sends the end user a consent question naming them and "
             "answers 409 (with Retry-After) while they decide; the same request succeeds "
             "once they allow it, and answers 403 once they deny it or let it time out. "
             "With backstage=true the token is for a BACKSTAGE terminal: it needs the "
             "'backstage' permission, the consent policy may forbid it for the machine, and "
             "on an attended session every technician (the session's own too) is asked "
             "about a terminal the same way. With file_transfer=true the token is for a "
             "FILE_TRANSFER session, under the 'file_transfer' permission and asked about "
             "the same way", query=s.ViewerTokenQuery,
             result=s.ViewerTokenOut, tag="sessions",
             responses=(*_404, (403, "no 'view' (or, for a terminal or files, 'backstage' or "
                                "'file_transfer') permission, "
                                "the consent policy forbids it, or the end user said no",
                                ("forbidden", "consent-refused")),
                        (409, "session not live, awaiting consent, or the end user is "
                              "being asked to admit this technician",
                         ("session-not-live", "awaiting-consent")))),
]

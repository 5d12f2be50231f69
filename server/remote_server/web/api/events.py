"""The audit log, for administrators (SPEC 6.2)."""

from __future__ import annotations

from remote_core.records import AuditEvent, Keyset

from . import schemas as s
from .endpoint import Call, Endpoint
from .paging import Cursors, Paged, collect
from .views import created, event_out

__all__ = ["ENDPOINTS"]

CURSORS = Cursors("events", int)


async def list_events(call: Call) -> Paged[s.EventOut]:
    q: s.EventQuery = call.query

    async def fetch(after: Keyset | None, limit: int) -> list[AuditEvent]:
        return await call.ctx.store.list_events(session_id=q.session_id, agent_id=q.agent_id,
                                                limit=limit, after=after, tenant_id=call.tenant)

    page = await collect(fetch, lambda e: Keyset(created(e.created_at), e.id or 0), CURSORS, q)
    return Paged([event_out(e) for e in page.items], page.cursor)


ENDPOINTS = [
    Endpoint("GET", "/api/events", list_events, "The tenant's audit log, newest first",
             access="admin",
             query=s.EventQuery, result=list[s.EventOut], tag="audit"),
]

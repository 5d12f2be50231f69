"""The audit log, for administrators (SPEC 6.2)."""

from __future__ import annotations

from . import schemas as s
from .endpoint import Call, Endpoint
from .views import event_out

__all__ = ["ENDPOINTS"]


async def list_events(call: Call) -> list[s.EventOut]:
    q: s.EventQuery = call.query
    events = await call.ctx.store.list_events(session_id=q.session_id, agent_id=q.agent_id,
                                              limit=q.limit)
    return [event_out(e) for e in events]


ENDPOINTS = [
    Endpoint("GET", "/api/events", list_events, "The audit log, newest first", access="admin",
             query=s.EventQuery, result=list[s.EventOut], tag="audit"),
]

"""A machine's history (SPEC 4): its sessions and its audit events, merged newest first and
paged like every list.

Both come from the store newest first, by creation time then id; the merged order puts,
at one instant, sessions before events. A history cursor is a keyset whose id says which
of the two the last entry was (``session:<id>`` or ``event:<id>``), and from it each of
the two lists resumes where the merged one left off.
"""

from __future__ import annotations

from datetime import datetime

from remote_core.records import AuditEvent, Keyset, SessionRecord

from . import schemas as s
from .endpoint import Call
from .paging import Cursors, Paged, collect
from .views import created, event_out, session_out

__all__ = ["EXPORT_LIMIT", "history_page"]

EXPORT_LIMIT = 10_000
"""Entries a removal with ``export=true`` returns at most."""

CURSORS = Cursors("history")
_SESSION = "session:"
_EVENT = "event:"
_LAST_EVENT_ID = 2**63 - 1
"""Above every event id: "every event of this instant" as a keyset."""

Entry = tuple[datetime, int, SessionRecord | AuditEvent]
"""An entry in merged order: its time, then 1 for a session or 0 for an event."""


def _resume(after: Keyset | None) -> tuple[Keyset | None, Keyset | None]:
    """Where the sessions and the events resume after the merged entry ``after``."""
    if after is None:
        return None, None
    text = str(after.id)
    if text.startswith(_SESSION):
        # Events of the same instant come after its sessions: all of them are still due.
        return Keyset(after.created_at, text[len(_SESSION):]), Keyset(after.created_at,
                                                                      _LAST_EVENT_ID)
    # The sessions of the same instant came before this event: none is still due.
    return Keyset(after.created_at, ""), Keyset(after.created_at, _event_id(text))


def _event_id(text: str) -> int:
    number = text[len(_EVENT):]
    if not text.startswith(_EVENT) or not number.isdigit():
        raise CURSORS.refused()
    return int(number)


def _key(entry: Entry) -> Keyset:
    moment, _, item = entry
    if isinstance(item, SessionRecord):
        return Keyset(moment, _SESSION + item.id)
    return Keyset(moment, f"{_EVENT}{item.id}")


def _order(entry: Entry) -> tuple[datetime, int, str | int]:
    moment, rank, item = entry
    return moment, rank, (item.id if isinstance(item, SessionRecord) else item.id or 0)


async def history_page(call: Call, agent_id: str, query: s.PageQuery) -> Paged[s.HistoryEntryOut]:
    store = call.ctx.store

    async def fetch(after: Keyset | None, limit: int) -> list[Entry]:
        sessions_after, events_after = _resume(after)
        sessions = await store.list_sessions(agent_id, limit, after=sessions_after,
                                             tenant_id=call.tenant)
        events = await store.list_events(agent_id=agent_id, limit=limit, after=events_after,
                                         tenant_id=call.tenant)
        merged: list[Entry] = [(created(r.created_at), 1, r) for r in sessions]
        merged += [(created(e.created_at), 0, e) for e in events]
        return sorted(merged, key=_order, reverse=True)[:limit]

    page = await collect(fetch, _key, CURSORS, query)
    return Paged([_entry_out(call, entry) for entry in page.items], page.cursor)


def _entry_out(call: Call, entry: Entry) -> s.HistoryEntryOut:
    moment, _, item = entry
    if isinstance(item, SessionRecord):
        return s.HistoryEntryOut(s.SessionEntryOut(
            type="session", at=moment,
            session=session_out(item, call.ctx.directory.session(item.id))))
    return s.HistoryEntryOut(s.EventEntryOut(type="event", at=moment, event=event_out(item)))

"""Support codes, sessions, releases and the session-event (audit) log."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from remote_core.records import (
    DEFAULT_TENANT_ID,
    AuditEvent,
    Keyset,
    Release,
    SessionRecord,
    SupportCode,
    tenant_of,
)

from ._schema import releases, session_events, sessions, support_codes
from ._sql import in_tenant, keyset_page

# -- support codes (SPEC 3.2) -------------------------------------------------------


def code_from_row(row: Any) -> SupportCode:
    m = row._mapping
    return SupportCode(
        code=m["code"], created_by=m["created_by"], technician_name=m["technician_name"] or "",
        expires_at=m["expires_at"], created_at=m["created_at"], consumed_at=m["consumed_at"],
        cancelled_at=m["cancelled_at"], agent_id=m["agent_id"], session_id=m["session_id"],
        tenant_id=m["tenant_id"] or DEFAULT_TENANT_ID,
    )


def create_support_code(conn: Connection, code: SupportCode, now: datetime) -> SupportCode:
    row = conn.execute(sa.insert(support_codes).values(
        code=code.code, created_by=code.created_by, technician_name=code.technician_name,
        expires_at=code.expires_at, created_at=code.created_at or now,
        consumed_at=code.consumed_at, cancelled_at=code.cancelled_at, agent_id=code.agent_id,
        session_id=code.session_id, tenant_id=code.tenant_id,
    ).returning(*support_codes.c)).one()
    return code_from_row(row)


def get_support_code(conn: Connection, code: str) -> SupportCode | None:
    row = conn.execute(sa.select(support_codes).where(support_codes.c.code == code)).first()
    return code_from_row(row) if row else None


def consume_support_code(conn: Connection, code: str, agent_id: str, session_id: str,
                         now: datetime) -> bool:
    """One conditional UPDATE: the database lets exactly one binder through."""
    c = support_codes.c
    result = conn.execute(
        sa.update(support_codes)
        .where(c.code == code, c.consumed_at.is_(None), c.cancelled_at.is_(None),
               c.expires_at > now)
        .values(consumed_at=now, agent_id=agent_id, session_id=session_id)
    )
    return result.rowcount == 1


def list_support_codes(conn: Connection, created_by: str | None, after: Keyset | None,
                       limit: int | None, tenant_id: str | None) -> list[SupportCode]:
    query = sa.select(support_codes)
    if tenant_id is not None:
        query = query.where(in_tenant(support_codes.c.tenant_id, tenant_id))
    if created_by is not None:
        query = query.where(support_codes.c.created_by == created_by)
    query = keyset_page(query, support_codes.c.created_at, support_codes.c.code, after=after,
                        limit=limit, newest_first=True)
    return [code_from_row(row) for row in conn.execute(query)]


def cancel_support_code(conn: Connection, code: str, now: datetime) -> bool:
    c = support_codes.c
    result = conn.execute(
        sa.update(support_codes)
        .where(c.code == code, c.consumed_at.is_(None), c.cancelled_at.is_(None))
        .values(cancelled_at=now)
    )
    return result.rowcount == 1


# -- sessions ------------------------------------------------------------------------


def session_from_row(row: Any) -> SessionRecord:
    m = row._mapping
    return SessionRecord(
        id=m["id"], agent_id=m["agent_id"], is_managed=bool(m["is_managed"]),
        source=m["source"] or "", consent_state=m["consent_state"] or "",
        technician=m["technician"], session_type=m["session_type"] or 0,
        created_at=m["created_at"], ended_at=m["ended_at"], end_reason=m["end_reason"],
        deleted_at=m["deleted_at"], tenant_id=m["tenant_id"] or DEFAULT_TENANT_ID,
    )


_CREATE_SESSION = sa.insert(sessions).returning(*sessions.c)
"""Built once, its values bound when executed: every admission runs it."""


def create_session(conn: Connection, session: SessionRecord, now: datetime) -> SessionRecord:
    row = conn.execute(_CREATE_SESSION, {
        "id": session.id, "agent_id": session.agent_id, "is_managed": session.is_managed,
        "source": session.source, "consent_state": session.consent_state,
        "technician": session.technician, "session_type": session.session_type,
        "created_at": session.created_at or now, "ended_at": session.ended_at,
        "end_reason": session.end_reason, "deleted_at": session.deleted_at,
        "tenant_id": session.tenant_id,
    }).one()
    return session_from_row(row)


def update_session(conn: Connection, session_id: str, changes: dict[str, Any]) -> None:
    if changes:
        conn.execute(sa.update(sessions).where(sessions.c.id == session_id).values(changes))


_IDS_A_QUERY = 500
"""Ids bound in one ``IN (...)`` list: well below SQLite's 32,766 bound variables."""


def end_sessions(conn: Connection, session_ids: tuple[str, ...], ended_at: datetime,
                 end_reason: str) -> None:
    for start in range(0, len(session_ids), _IDS_A_QUERY):
        conn.execute(sa.update(sessions).where(
            sessions.c.id.in_(session_ids[start:start + _IDS_A_QUERY]))
            .values(ended_at=ended_at, end_reason=end_reason))


def end_open_sessions(conn: Connection, end_reason: str, ended_at: datetime,
                      keep: tuple[str, ...] = (), created_before: datetime | None = None) -> int:
    query = sa.update(sessions).where(sessions.c.ended_at.is_(None))
    if keep:
        query = query.where(sessions.c.id.not_in(keep))
    if created_before is not None:
        query = query.where(sessions.c.created_at < created_before)
    return conn.execute(query.values(ended_at=ended_at, end_reason=end_reason)).rowcount


def get_session(conn: Connection, session_id: str) -> SessionRecord | None:
    row = conn.execute(sa.select(sessions).where(
        sessions.c.id == session_id, sessions.c.deleted_at.is_(None))).first()
    return session_from_row(row) if row else None


def ended_sessions(conn: Connection, session_ids: tuple[str, ...]) -> set[str]:
    ended: set[str] = set()
    for start in range(0, len(session_ids), _IDS_A_QUERY):
        ended.update(conn.execute(sa.select(sessions.c.id).where(
            sessions.c.id.in_(session_ids[start:start + _IDS_A_QUERY]),
            sessions.c.ended_at.is_not(None))).scalars())
    return ended


def list_sessions(conn: Connection, agent_id: str | None, limit: int,
                  after: Keyset | None, tenant_id: str | None) -> list[SessionRecord]:
    query = sa.select(sessions).where(sessions.c.deleted_at.is_(None))
    if tenant_id is not None:
        query = query.where(in_tenant(sessions.c.tenant_id, tenant_id))
    if agent_id is not None:
        query = query.where(sessions.c.agent_id == agent_id)
    query = keyset_page(query, sessions.c.created_at, sessions.c.id, after=after, limit=limit,
                        newest_first=True)
    return [session_from_row(row) for row in conn.execute(query)]


def soft_delete_session(conn: Connection, session_id: str, now: datetime) -> bool:
    result = conn.execute(sa.update(sessions).where(
        sessions.c.id == session_id, sessions.c.deleted_at.is_(None)).values(deleted_at=now))
    return result.rowcount == 1


# -- releases --------------------------------------------------------------------------


def release_from_row(row: Any) -> Release:
    m = row._mapping
    return Release(
        version=m["version"], download_url=m["download_url"],
        checksum_sha256=m["checksum_sha256"], mandatory=bool(m["mandatory"]),
        notes=m["notes"] or "", created_at=m["created_at"],
        tenant_id=m["tenant_id"] or DEFAULT_TENANT_ID,
    )


def create_release(conn: Connection, release: Release, now: datetime) -> Release:
    row = conn.execute(sa.insert(releases).values(
        version=release.version, download_url=release.download_url,
        checksum_sha256=release.checksum_sha256, mandatory=release.mandatory,
        notes=release.notes, created_at=release.created_at or now, tenant_id=release.tenant_id,
    ).returning(*releases.c)).one()
    return release_from_row(row)


def get_release(conn: Connection, version: str) -> Release | None:
    row = conn.execute(sa.select(releases).where(releases.c.version == version)).first()
    return release_from_row(row) if row else None


def list_releases(conn: Connection, after: Keyset | None, limit: int | None,
                  tenant_id: str | None) -> list[Release]:
    query = sa.select(releases)
    if tenant_id is not None:
        query = query.where(sa.or_(in_tenant(releases.c.tenant_id, DEFAULT_TENANT_ID),
                                   releases.c.tenant_id == tenant_id))
    query = keyset_page(query, releases.c.created_at, releases.c.version,
                        after=after, limit=limit, newest_first=True)
    return [release_from_row(row) for row in conn.execute(query)]


def update_release(conn: Connection, version: str, changes: dict[str, Any]) -> Release | None:
    if changes:
        conn.execute(sa.update(releases).where(releases.c.version == version).values(changes))
    return get_release(conn, version)


def delete_release(conn: Connection, version: str) -> bool:
    return conn.execute(sa.delete(releases).where(releases.c.version == version)).rowcount == 1


# -- audit --------------------------------------------------------------------------------


def event_from_row(row: Any) -> AuditEvent:
    m = row._mapping
    return AuditEvent(
        kind=m["kind"], session_id=m["session_id"], agent_id=m["agent_id"], actor=m["actor"],
        target=m["target"], client_ip=m["client_ip"], detail=dict(m["detail"] or {}),
        created_at=m["created_at"], id=m["id"], tenant_id=m["tenant_id"] or DEFAULT_TENANT_ID,
    )


def add_event(conn: Connection, event: AuditEvent, now: datetime) -> None:
    add_events(conn, [event], now)


def add_events(conn: Connection, events: Sequence[AuditEvent], now: datetime) -> None:
    """One statement, executed for many rows (executemany), in order."""
    if events:
        conn.execute(sa.insert(session_events), [_event_row(event, now) for event in events])


def _event_row(event: AuditEvent, now: datetime) -> dict[str, Any]:
    return {"kind": event.kind, "session_id": event.session_id, "agent_id": event.agent_id,
            "actor": event.actor, "target": event.target, "client_ip": event.client_ip,
            "detail": dict(event.detail), "created_at": event.created_at or now,
            "tenant_id": tenant_of(event.tenant_id)}


def list_events(conn: Connection, session_id: str | None, agent_id: str | None,
                limit: int, after: Keyset | None, tenant_id: str | None) -> list[AuditEvent]:
    query = sa.select(session_events)
    if tenant_id is not None:
        query = query.where(in_tenant(session_events.c.tenant_id, tenant_id))
    if session_id is not None:
        query = query.where(session_events.c.session_id == session_id)
    if agent_id is not None:
        query = query.where(session_events.c.agent_id == agent_id)
    query = keyset_page(query, session_events.c.created_at, session_events.c.id, after=after,
                        limit=limit, newest_first=True)
    return [event_from_row(row) for row in conn.execute(query)]

"""Session recordings' rows (the segments live in a recording store)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from remote_core.records import DEFAULT_TENANT_ID, Keyset, RecordingRecord

from ._schema import recordings
from ._sql import in_tenant, keyset_page

__all__ = ["add_recording", "delete_recording", "end_open_recordings", "finish_recording",
           "get_recording", "list_recordings"]

_FIELDS = tuple(f.name for f in dataclasses.fields(RecordingRecord))


def _from_row(row: Any) -> RecordingRecord:
    m = row._mapping
    fields = {name: m[name] for name in _FIELDS}
    fields["tenant_id"] = fields["tenant_id"] or DEFAULT_TENANT_ID
    fields["technicians"] = tuple(json.loads(fields["technicians"] or "[]"))
    return RecordingRecord(**fields)


def _names(technicians: Sequence[str]) -> str:
    return json.dumps(list(technicians))


def add_recording(conn: Connection, recording: RecordingRecord) -> None:
    values = dataclasses.asdict(recording)
    values["technicians"] = _names(recording.technicians)
    conn.execute(sa.insert(recordings).values(values))


def finish_recording(conn: Connection, recording_id: str, changes: dict[str, Any]) -> None:
    if "technicians" in changes:
        changes = {**changes, "technicians": _names(changes["technicians"])}
    conn.execute(sa.update(recordings).where(recordings.c.id == recording_id).values(changes))


def get_recording(conn: Connection, recording_id: str) -> RecordingRecord | None:
    row = conn.execute(sa.select(recordings).where(recordings.c.id == recording_id)).first()
    return _from_row(row) if row else None


def list_recordings(conn: Connection, session_id: str | None, agent_id: str | None,
                    technician: str | None, since: datetime | None, limit: int,
                    after: Keyset | None, tenant_id: str | None) -> list[RecordingRecord]:
    query = sa.select(recordings)
    if tenant_id is not None:
        query = query.where(in_tenant(recordings.c.tenant_id, tenant_id))
    if session_id is not None:
        query = query.where(recordings.c.session_id == session_id)
    if agent_id is not None:
        query = query.where(recordings.c.agent_id == agent_id)
    if technician is not None:  # one name of the JSON array, quotes included
        query = query.where(recordings.c.technicians.contains(json.dumps(technician),
                                                              autoescape=True))
    if since is not None:
        query = query.where(recordings.c.started_at >= since)
    query = keyset_page(query, recordings.c.started_at, recordings.c.id, after=after,
                        limit=limit, newest_first=True)
    return [_from_row(row) for row in conn.execute(query)]


def delete_recording(conn: Connection, recording_id: str) -> bool:
    return conn.execute(sa.delete(recordings).where(recordings.c.id == recording_id)
                        ).rowcount == 1


def end_open_recordings(conn: Connection, reason: str, ended_at: datetime) -> int:
    return conn.execute(sa.update(recordings).where(recordings.c.state == "recording").values(
        state="incomplete", reason=reason, ended_at=ended_at)).rowcount

"""Session recordings: list, read, check against their hash chain, and their segments (for
players), under the ``recordings`` permission; each technician's watching is audited."""

from __future__ import annotations

import time

from starlette.responses import Response

from remote_core.errors import NotFoundError, StoreError
from remote_core.interfaces import RecordingStore
from remote_core.records import AuditEvent, Keyset, RecordingRecord

from ...recordings import verify_recording
from ..problem import Problem
from . import schemas as s
from .endpoint import Call, Endpoint
from .paging import Cursors, Paged, collect
from .views import path_id, recording_out, visible_machine

__all__ = ["ENDPOINTS"]

CURSORS = Cursors("recordings")
VIEW_AUDIT_EVERY = 300.0
"""Seconds within which one user's further segment reads of one recording are the same
view (one ``recording.viewed`` row, not one per segment)."""
SEGMENT_MEDIA_TYPE = "application/vnd.remote-support.recording-segment"

_viewed: dict[tuple[str, str], float] = {}


def _may_watch(call: Call) -> None:
    if not (call.me.is_admin or "recordings" in call.me.permissions):
        raise Problem(403, "session recordings need the 'recordings' permission")


async def _find(call: Call) -> RecordingRecord:
    _may_watch(call)
    recording_id = path_id(call.param("recording_id"), "recording")
    record = await call.ctx.store.get_recording(recording_id)
    if record is None or not await visible_machine(call, record.agent_id, record.tenant_id):
        raise Problem(404, "no such recording")
    return record


def _store(call: Call) -> RecordingStore:
    if call.ctx.recordings is None:
        raise Problem(503, "no loaded plugin reads this server's recordings_url",
                      kind="recordings-unavailable")
    return call.ctx.recordings


async def list_recordings(call: Call) -> Paged[s.RecordingOut]:
    _may_watch(call)
    q: s.RecordingQuery = call.query

    async def fetch(after: Keyset | None, limit: int) -> list[RecordingRecord]:
        return await call.ctx.store.list_recordings(session_id=q.session_id,
                                                    agent_id=q.agent_id,
                                                    technician=q.technician, since=q.since,
                                                    limit=limit, after=after,
                                                    tenant_id=call.tenant)

    async def keep(record: RecordingRecord) -> bool:
        return await visible_machine(call, record.agent_id, record.tenant_id)

    page = await collect(fetch, lambda r: Keyset(r.started_at, r.id), CURSORS, q, keep=keep)
    return Paged([recording_out(r) for r in page.items], page.cursor)


async def get_recording(call: Call) -> s.RecordingOut:
    return recording_out(await _find(call))


async def check_recording(call: Call) -> s.RecordingCheckOut:
    record = await _find(call)
    try:
        _, verdict = await verify_recording(call.ctx.store, _store(call), record.id)
    except StoreError as exc:
        raise Problem(503, f"the recording store could not be read: {exc}",
                      kind="recordings-unavailable") from None
    return s.RecordingCheckOut(intact=verdict.intact, segments=verdict.segments,
                               sha256=verdict.final, first_bad=verdict.first_bad,
                               reason=verdict.reason)


async def get_segment(call: Call) -> Response:
    record = await _find(call)
    raw = call.param("index")
    if not raw.isdigit() or int(raw) >= record.segments:
        raise Problem(404, "no such segment")
    try:
        data = await _store(call).get_segment(record.id, int(raw))
    except NotFoundError:
        raise Problem(404, "that segment is missing from the recording store") from None
    except StoreError as exc:
        raise Problem(503, f"the recording store could not be read: {exc}",
                      kind="recordings-unavailable") from None
    await _audit_view(call, record)
    return Response(data, media_type=SEGMENT_MEDIA_TYPE,
                    headers={"cache-control": "private, max-age=3600, immutable"})


async def _audit_view(call: Call, record: RecordingRecord) -> None:
    """One ``recording.viewed`` per user and recording within ``VIEW_AUDIT_EVERY``."""
    now = time.monotonic()
    key = (call.me.id, record.id)
    if now - _viewed.get(key, -VIEW_AUDIT_EVERY) < VIEW_AUDIT_EVERY:
        return
    for stale in [k for k, at in _viewed.items() if now - at >= VIEW_AUDIT_EVERY]:
        del _viewed[stale]
    _viewed[key] = now
    await call.audit(AuditEvent(
        "recording.viewed", session_id=record.session_id, agent_id=record.agent_id,
        actor=call.me.username, client_ip=call.ip, detail={"recording_id": record.id},
        tenant_id=call.tenant))


_ONE = "/api/recordings/{recording_id}"
_FORBIDDEN = (403, "no 'recordings' permission")
_404 = (404, "no such recording")
_UNAVAILABLE = (503, "the recording store cannot be read", ("recordings-unavailable",))

ENDPOINTS = [
    Endpoint("GET", "/api/recordings", list_recordings, "Session recordings, newest first",
             query=s.RecordingQuery, result=list[s.RecordingOut], tag="recordings",
             responses=(_FORBIDDEN,)),
    Endpoint("GET", _ONE, get_recording, "Get a recording", result=s.RecordingOut,
             tag="recordings", responses=(_FORBIDDEN, _404)),
    Endpoint("GET", _ONE + "/check", check_recording,
             "Read the recording's segments back and check them against the hash chain "
             "kept in the database: intact, or the first segment that changed",
             result=s.RecordingCheckOut, tag="recordings",
             responses=(_FORBIDDEN, _404, _UNAVAILABLE)),
    Endpoint("GET", _ONE + "/segments/{index}", get_segment,
             "One segment of the recording (remote_core.recording's format), for a player; "
             "audited as recording.viewed", tag="recordings",
             responses=(_FORBIDDEN, (404, "no such recording or segment"), _UNAVAILABLE)),
]

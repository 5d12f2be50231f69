"""Recordings after the fact: their segments read back and checked against the chain's hash
the database holds (``remote-support recordings verify``), and their removal (with their
session or machine, or past their retention)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from datetime import datetime, timedelta

import anyio

from remote_core.errors import NotFoundError, StoreError
from remote_core.interfaces import RecordingStore, Store
from remote_core.recording import Verdict, verify
from remote_core.records import AuditEvent, Keyset, RecordingRecord, utcnow

from .relay.audit import Audit

__all__ = ["keep_recordings", "purge_recordings", "segments", "verify_recording"]

log = logging.getLogger(__name__)

RETENTION_EVERY = 3600.0
"""Seconds between two looks for recordings past their retention."""


async def segments(recordings: RecordingStore, record: RecordingRecord) -> AsyncIterator[bytes]:
    """The segments the row says were written, in order; a missing one ends the walk."""
    for index in range(record.segments):
        try:
            yield await recordings.get_segment(record.id, index)
        except NotFoundError:
            return


async def verify_recording(store: Store, recordings: RecordingStore,
                           recording_id: str) -> tuple[RecordingRecord, Verdict]:
    """The recording's row and whether its segments are the ones that were written.

    :raises NotFoundError: no such recording.
    """
    record = await store.get_recording(recording_id)
    if record is None:
        raise NotFoundError(f"no recording {recording_id}")
    read = [data async for data in segments(recordings, record)]
    return record, verify(record.id, read, final=record.sha256, count=record.segments)


async def purge_recordings(store: Store, recordings: RecordingStore | None, audit: Audit, *,
                           reason: str, session_id: str | None = None,
                           agent_id: str | None = None, started_before: datetime | None = None,
                           actor: str | None = None, client_ip: str | None = None) -> int:
    """Remove the recordings of a session, of a machine, or started before a moment (their
    segments, then their rows), each audited as ``recording.purged``; return how many.

    One still being written is left alone (it ends with its session, and goes with the
    next purge). A segment the store cannot remove leaves its row, so nothing is lost
    track of: the purge stops there, to be tried again.
    """
    after = Keyset(started_before, "") if started_before is not None else None
    purged = 0
    while True:
        batch = await store.list_recordings(session_id=session_id, agent_id=agent_id,
                                            limit=100, after=after)
        if not batch:
            return purged
        after = Keyset(batch[-1].started_at, batch[-1].id)
        for record in batch:
            if record.state == "recording":
                continue
            if recordings is not None:
                await recordings.delete_recording(record.id)
            if await store.delete_recording(record.id):
                purged += 1
                await audit.record(AuditEvent(
                    "recording.purged", session_id=record.session_id, agent_id=record.agent_id,
                    actor=actor, client_ip=client_ip,
                    detail={"recording_id": record.id, "reason": reason,
                            "sha256": record.sha256}))


async def keep_recordings(store: Store, recordings: RecordingStore | None, audit: Audit,
                          days: int, every: float = RETENTION_EVERY) -> None:
    """Purge recordings older than ``days`` now and then, for the server's life."""
    while True:
        cutoff = utcnow() - timedelta(days=days)
        try:
            gone = await purge_recordings(store, recordings, audit, started_before=cutoff,
                                          reason=f"older than {days} day" + "s" * (days != 1))
        except StoreError as exc:
            log.warning("recordings past their retention not purged yet: %s", exc)
        else:
            if gone:
                log.info("purged %d recordings past their retention (%d days)", gone, days)
        await anyio.sleep(every)

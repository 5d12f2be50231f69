"""Recordings after the fact: their segments read back and checked against the chain's hash
the database holds (``remote-support recordings verify``), their video as a file
(``recordings export``), and their removal (with their session or machine, or past their
retention)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator, Iterable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
from google.protobuf.message import DecodeError

from remote_core.codecs import FrameDecoder
from remote_core.errors import NotFoundError, RemoteSupportError, StoreError
from remote_core.interfaces import RecordingStore, Store
from remote_core.plugins import CODEC_PLUGINS, get_plugin_manager
from remote_core.protocol import pb
from remote_core.recording import Verdict, records, verify
from remote_core.records import AuditEvent, Keyset, RecordingRecord, tenant_of, utcnow
from remote_core.types import EncodedFrame
from remote_core.video import from_wire

from .recording_policy import Retention
from .relay.audit import Audit
from .settings import ServerSettings

__all__ = ["export_recording", "keep_recordings", "purge_expired", "purge_recordings",
           "segments", "verify_recording", "video_of"]

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
    purged = 0
    async for record in _listed(store, session_id=session_id, agent_id=agent_id,
                                started_before=started_before):
        purged += await _purge(store, recordings, audit, record, reason=reason, actor=actor,
                               client_ip=client_ip)
    return purged


async def _listed(store: Store, *, session_id: str | None = None, agent_id: str | None = None,
                  started_before: datetime | None = None) -> AsyncIterator[RecordingRecord]:
    """Recordings that ended, newest first, a page at a time."""
    after = Keyset(started_before, "") if started_before is not None else None
    while True:
        batch = await store.list_recordings(session_id=session_id, agent_id=agent_id,
                                            limit=100, after=after)
        if not batch:
            return
        after = Keyset(batch[-1].started_at, batch[-1].id)
        for record in batch:
            if record.state != "recording":
                yield record


async def _purge(store: Store, recordings: RecordingStore | None, audit: Audit,
                 record: RecordingRecord, *, reason: str, actor: str | None = None,
                 client_ip: str | None = None) -> int:
    """Remove one recording, audited; 1 once its row is gone."""
    if recordings is not None:
        await recordings.delete_recording(record.id)
    if not await store.delete_recording(record.id):
        return 0
    await audit.record(AuditEvent(
        "recording.purged", session_id=record.session_id, agent_id=record.agent_id,
        actor=actor, client_ip=client_ip,
        detail={"recording_id": record.id, "reason": reason, "sha256": record.sha256}))
    return 1


async def purge_expired(store: Store, recordings: RecordingStore | None, audit: Audit,
                        retention: Retention, now: datetime) -> int:
    """Remove the recordings past their machine's retention (its own entry, its tags',
    its organization's, its tenant's or every machine's); return how many."""
    if not retention.shortest:
        return 0
    machines: dict[str, tuple[str, tuple[str, ...]]] = {}  # agent id -> organization, tags
    purged = 0
    async for record in _listed(store, started_before=now - timedelta(days=retention.shortest)):
        if record.agent_id not in machines:
            machine = await store.get_machine(record.agent_id)
            machines[record.agent_id] = ((machine.organization, machine.tags)
                                         if machine is not None else ("", ()))
        organization, tags = machines[record.agent_id]
        days = retention.days(agent_id=record.agent_id, organization=organization, tags=tags,
                              tenant_id=tenant_of(record.tenant_id))
        if days and record.started_at < now - timedelta(days=days):
            purged += await _purge(store, recordings, audit, record,
                                   reason=f"older than {days} day" + "s" * (days != 1))
    return purged


async def keep_recordings(store: Store, recordings: RecordingStore | None, audit: Audit,
                          retention: Retention, every: float = RETENTION_EVERY) -> None:
    """Purge recordings past their retention now and then, for the server's life."""
    while True:
        try:
            gone = await purge_expired(store, recordings, audit, retention, utcnow())
        except StoreError as exc:
            log.warning("recordings past their retention not purged yet: %s", exc)
        else:
            if gone:
                log.info("purged %d recordings past their retention", gone)
        await anyio.sleep(every)


def video_of(segments: Iterable[bytes]) -> Iterator[tuple[int, str, EncodedFrame]]:
    """The video frames of a recording's segments: ``(milliseconds, codec, frame)``."""
    for at_ms, data in records(segments):
        message = pb.Message()
        try:
            message.ParseFromString(data)
            if message.WhichOneof("payload") != "video_frame":
                continue
            codec, frame = from_wire(message.video_frame)
        except (DecodeError, ValueError):
            continue  # what a viewer would have dropped too
        yield at_ms, codec, frame


async def export_recording(settings: ServerSettings, store: Store, recordings: RecordingStore,
                           recording_id: str, out: Path) -> tuple[RecordingRecord, Any]:
    """Write a recording's video to ``out`` (.mp4 or .webm) once it verifies; the codec
    plugins (remote-codec-pyav) decode and remux it, so they must be installed here.

    :raises RemoteSupportError: no such recording, it does not verify, or no codecs.
    """
    record, verdict = await verify_recording(store, recordings, recording_id)
    if not verdict.intact:
        raise RemoteSupportError(f"recording {recording_id} is not intact ({verdict.reason}); "
                                 "it is not exported")
    try:
        from remote_codec_pyav.export import export_video
    except ImportError:
        raise RemoteSupportError("exporting needs the codec plugins beside the server "
                                 "(the remote-codec-pyav distribution and its codecs)") from None
    with_codecs = dataclasses.replace(
        settings, extra_plugins=(*settings.extra_plugins, *CODEC_PLUGINS))
    decoders = FrameDecoder(get_plugin_manager(with_codecs).codecs())

    def walk() -> Iterator[bytes]:
        for index in range(record.segments):
            yield anyio.from_thread.run(recordings.get_segment, record.id, index)

    try:
        exported = await anyio.to_thread.run_sync(
            export_video, lambda: video_of(walk()), out, decoders)
    except ValueError as exc:
        raise RemoteSupportError(f"recording {recording_id} cannot be exported: {exc}") from None
    return record, exported

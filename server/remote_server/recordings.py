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
from remote_core.records import AuditEvent, Keyset, RecordingRecord, utcnow
from remote_core.types import EncodedFrame
from remote_core.video import from_wire

from .relay.audit import Audit
from .settings import ServerSettings

__all__ = ["export_recording", "keep_recordings", "purge_recordings", "segments",
           "verify_recording", "video_of"]

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

"""Reading recordings back: their segments from the recording store, checked against the
chain's hash the database holds (``remote-support recordings verify``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from remote_core.errors import NotFoundError
from remote_core.interfaces import RecordingStore, Store
from remote_core.recording import Verdict, verify
from remote_core.records import RecordingRecord

__all__ = ["segments", "verify_recording"]


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

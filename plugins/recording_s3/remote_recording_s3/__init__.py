"""Built-in plugin ``recording_s3``: session recordings in S3-compatible object storage."""

from __future__ import annotations

from remote_core import hookimpl
from remote_core.types import RecordingStoreSpec

from .location import S3Location, location_of
from .store import S3RecordingStore

__all__ = ["S3Location", "S3RecordingStore", "location_of", "register_recording_stores"]


@hookimpl
def register_recording_stores() -> list[RecordingStoreSpec]:
    return [RecordingStoreSpec(name="s3", schemes=("s3",), factory=S3RecordingStore)]

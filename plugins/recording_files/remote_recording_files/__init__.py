"""Built-in plugin ``recording_files``: session recordings in a folder on the server."""

from __future__ import annotations

from remote_core import hookimpl
from remote_core.types import RecordingStoreSpec

from .store import FileRecordingStore, folder_of

__all__ = ["FileRecordingStore", "folder_of", "register_recording_stores"]


@hookimpl
def register_recording_stores() -> list[RecordingStoreSpec]:
    return [RecordingStoreSpec(name="files", schemes=("file",), factory=FileRecordingStore)]

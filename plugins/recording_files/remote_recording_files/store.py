"""Segments as files: ``<folder>/<recording id>/<index>.seg``, each renamed into place whole."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import unquote, urlsplit

import anyio

from remote_core.errors import ConfigError, NotFoundError, StoreError
from remote_core.interfaces import RecordingStore
from remote_core.recording import is_recording_id

__all__ = ["FileRecordingStore", "folder_of"]

def folder_of(url: str) -> Path:
    """The folder a ``file:`` URL names: ``file:recordings`` (relative to the working
    directory), ``file:///var/lib/remote-support/recordings`` (absolute).

    :raises ConfigError: not a ``file:`` URL, or one naming another host.
    """
    parts = urlsplit(url)
    if parts.scheme != "file":
        raise ConfigError(f"recordings URL {url!r}: the files store takes file: URLs")
    if parts.netloc not in ("", "localhost"):
        raise ConfigError(f"recordings URL {url!r}: a file: URL names this machine's folders")
    path = unquote(parts.path)
    if not path:
        raise ConfigError(f"recordings URL {url!r} names no folder")
    return Path(path)


class FileRecordingStore(RecordingStore):
    """A :class:`~remote_core.interfaces.RecordingStore` in a folder (blocking file calls
    run in worker threads)."""

    def __init__(self, url: str) -> None:
        self.folder = folder_of(url)

    async def open(self) -> None:
        try:
            await anyio.to_thread.run_sync(lambda: self.folder.mkdir(parents=True, exist_ok=True))
        except OSError as exc:
            raise StoreError(f"cannot create the recordings folder {self.folder}: "
                             f"{exc.strerror or exc}") from exc

    def _segment(self, recording_id: str, index: int) -> Path:
        if not is_recording_id(recording_id) or index < 0:
            raise ValueError(f"not a recording id and segment index: {recording_id!r}, {index}")
        return self.folder / recording_id / f"{index:06d}.seg"

    async def put_segment(self, recording_id: str, index: int, data: bytes) -> None:
        path = self._segment(recording_id, index)
        try:
            await anyio.to_thread.run_sync(_write_whole, path, data)
        except OSError as exc:
            raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from exc

    async def get_segment(self, recording_id: str, index: int) -> bytes:
        path = self._segment(recording_id, index)
        try:
            return await anyio.to_thread.run_sync(path.read_bytes)
        except FileNotFoundError as exc:
            raise NotFoundError(f"segment {index} of recording {recording_id} is missing") \
                from exc
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from exc

    async def delete_recording(self, recording_id: str) -> None:
        folder = self._segment(recording_id, 0).parent
        try:
            await anyio.to_thread.run_sync(lambda: shutil.rmtree(folder, ignore_errors=False)
                                           if folder.exists() else None)
        except OSError as exc:
            raise StoreError(f"cannot remove {folder}: {exc.strerror or exc}") from exc


def _write_whole(path: Path, data: bytes) -> None:
    """Write to a hidden temporary file, flush it to disk, rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    with partial.open("wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(partial, path)

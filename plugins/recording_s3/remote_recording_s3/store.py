"""Segments as objects: ``<prefix>/<recording id>/<index>.seg`` in an S3 bucket.

The URL is read when the store is built (at start-up, so a bad one stops the server with
one line); boto3 is imported and the bucket checked when it opens. Blocking boto3 calls
run in worker threads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from remote_core.errors import StoreError
from remote_core.interfaces import RecordingStore
from remote_core.recording import is_recording_id

from .location import location_of

if TYPE_CHECKING:
    from .bucket import Bucket

__all__ = ["S3RecordingStore"]

class S3RecordingStore(RecordingStore):
    """A :class:`~remote_core.interfaces.RecordingStore` in S3-compatible object storage."""

    def __init__(self, url: str) -> None:
        self.location = location_of(url)
        self._bucket: Bucket | None = None
        self._connecting = anyio.Lock()  # one client, however many calls come first

    async def open(self) -> None:
        """Build the client and check the bucket is there and reachable."""
        bucket = await self._connected()
        await anyio.to_thread.run_sync(bucket.check)

    async def close(self) -> None:
        bucket, self._bucket = self._bucket, None
        if bucket is not None:
            await anyio.to_thread.run_sync(bucket.close)

    async def _connected(self) -> Bucket:
        async with self._connecting:
            if self._bucket is None:
                from .bucket import FAILURES, Bucket  # boto3 takes half a second to import

                try:
                    self._bucket = await anyio.to_thread.run_sync(Bucket, self.location)
                except (*FAILURES, ValueError) as exc:
                    raise StoreError(f"recordings: cannot set up the S3 client: {exc}") \
                        from exc
            return self._bucket

    def _key(self, recording_id: str, index: int | None = None) -> str:
        """The key of a segment, or with ``index=None`` the prefix of all of a recording's
        (a recording id is one plain key part: no ``/``, ``..`` or leading dot)."""
        if not is_recording_id(recording_id) or (index is not None and index < 0):
            raise ValueError(f"not a recording id and segment index: {recording_id!r}, {index}")
        if index is None:
            return self.location.key(recording_id, "")
        return self.location.key(recording_id, f"{index:06d}.seg")

    async def put_segment(self, recording_id: str, index: int, data: bytes) -> None:
        key = self._key(recording_id, index)
        bucket = await self._connected()
        await anyio.to_thread.run_sync(bucket.put, key, data)

    async def get_segment(self, recording_id: str, index: int) -> bytes:
        key = self._key(recording_id, index)
        bucket = await self._connected()
        return await anyio.to_thread.run_sync(
            bucket.get, key, f"segment {index} of recording {recording_id} is missing")

    async def delete_recording(self, recording_id: str) -> None:
        prefix = self._key(recording_id)
        bucket = await self._connected()
        await anyio.to_thread.run_sync(bucket.delete_under, prefix)

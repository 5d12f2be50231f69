"""The contract every :class:`~remote_core.interfaces.RecordingStore` meets, as a test class
a recording store plugin's suite subclasses::

    from remote_core.testing.recording_store_contract import RecordingStoreContract

    class TestMyStore(RecordingStoreContract):
        @pytest.fixture
        async def recordings(self):
            store = MyStore("my://...")
            await store.open()
            yield store
            await store.close()

Tests are ``anyio`` tests; the plugin's suite provides the ``anyio_backend`` fixture.
"""

from __future__ import annotations

import os
import uuid

import pytest

from ..errors import NotFoundError
from ..interfaces import RecordingStore
from ..recording import RecordingWriter, seal_all, verify

__all__ = ["RecordingStoreContract"]

MiB = 1024 * 1024


class RecordingStoreContract:
    """Segments go in whole, come back byte for byte, and go away with their recording."""

    pytestmark = pytest.mark.anyio

    @pytest.fixture
    def recording_id(self) -> str:
        return str(uuid.uuid4())

    async def test_segments_come_back_byte_for_byte(self, recordings: RecordingStore,
                                                    recording_id: str) -> None:
        data = [os.urandom(size) for size in (1, 1000, 300_000)]
        for index, segment in enumerate(data):
            await recordings.put_segment(recording_id, index, segment)
        assert [await recordings.get_segment(recording_id, i) for i in range(3)] == data

    async def test_a_large_segment_comes_back_whole(self, recordings: RecordingStore,
                                                    recording_id: str) -> None:
        """Past 16 MiB (a segment without keyframes is cut there, a 4K frame past it)."""
        data = os.urandom(17 * MiB)
        await recordings.put_segment(recording_id, 0, data)
        assert await recordings.get_segment(recording_id, 0) == data

    async def test_writing_a_segment_again_replaces_it(self, recordings: RecordingStore,
                                                       recording_id: str) -> None:
        await recordings.put_segment(recording_id, 0, b"first")
        await recordings.put_segment(recording_id, 0, b"again")
        assert await recordings.get_segment(recording_id, 0) == b"again"

    async def test_a_missing_segment_is_not_found(self, recordings: RecordingStore,
                                                  recording_id: str) -> None:
        with pytest.raises(NotFoundError):
            await recordings.get_segment(recording_id, 0)
        await recordings.put_segment(recording_id, 0, b"x")
        with pytest.raises(NotFoundError):
            await recordings.get_segment(recording_id, 1)

    async def test_deleting_a_recording_removes_its_segments_only(
            self, recordings: RecordingStore, recording_id: str) -> None:
        other = str(uuid.uuid4())
        for index in range(3):
            await recordings.put_segment(recording_id, index, b"mine")
        await recordings.put_segment(other, 0, b"another's")
        await recordings.delete_recording(recording_id)
        for index in range(3):
            with pytest.raises(NotFoundError):
                await recordings.get_segment(recording_id, index)
        assert await recordings.get_segment(other, 0) == b"another's"
        await recordings.delete_recording(recording_id)  # nothing left: no error

    async def test_a_recording_written_through_it_verifies(self, recordings: RecordingStore,
                                                           recording_id: str) -> None:
        writer = RecordingWriter(recording_id, segment_bytes=64 * 1024)
        sealed = [s for i in range(60)
                  if (s := writer.add(i * 40, os.urandom(5000), keyframe=i % 6 == 0))]
        last = writer.seal()
        assert last is not None
        finished, chain = seal_all(recording_id, [*sealed, last])
        for index, segment in enumerate(finished):
            await recordings.put_segment(recording_id, index, segment)
        read = [await recordings.get_segment(recording_id, i) for i in range(chain.segments)]
        assert verify(recording_id, read, final=chain.final, count=chain.segments).intact

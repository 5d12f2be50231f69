"""The files recording store on this machine's file system: segments whole or not at all,
a missing one said as such, URLs it cannot use refused at start-up."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from remote_recording_files import FileRecordingStore, folder_of

from remote_core.errors import ConfigError, NotFoundError, StoreError
from remote_core.testing.recording_store_contract import RecordingStoreContract

pytestmark = pytest.mark.anyio


async def test_segments_are_kept_read_back_and_removed(tmp_path: Path) -> None:
    store = FileRecordingStore(f"file://{tmp_path / 'recordings'}")
    await store.open()
    assert (tmp_path / "recordings").is_dir()
    data = [os.urandom(1000 + i) for i in range(3)]
    for index, segment in enumerate(data):
        await store.put_segment("rec-1", index, segment)
    assert [await store.get_segment("rec-1", i) for i in range(3)] == data
    assert sorted(p.name for p in (tmp_path / "recordings" / "rec-1").iterdir()) == [
        "000000.seg", "000001.seg", "000002.seg"]  # no partial file left behind
    await store.put_segment("rec-1", 1, b"again")  # a retried write replaces it whole
    assert await store.get_segment("rec-1", 1) == b"again"
    with pytest.raises(NotFoundError, match="segment 3 of recording rec-1"):
        await store.get_segment("rec-1", 3)
    await store.delete_recording("rec-1")
    assert not (tmp_path / "recordings" / "rec-1").exists()
    await store.delete_recording("rec-1")  # already gone: no error
    await store.close()


async def test_ids_cannot_leave_the_folder(tmp_path: Path) -> None:
    store = FileRecordingStore(f"file://{tmp_path}")
    for bad in ("../escape", "a/b", "", ".hidden"):
        with pytest.raises(ValueError, match="not a recording id"):
            await store.put_segment(bad, 0, b"x")
    assert not any(tmp_path.iterdir())  # noqa: ASYNC240 - a test's own look at its folder


async def test_a_folder_it_cannot_write_is_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    store = FileRecordingStore(f"file://{blocker}/recordings")
    with pytest.raises(StoreError, match="cannot create the recordings folder"):
        await store.open()
    with pytest.raises(StoreError, match="cannot write"):
        await store.put_segment("rec-1", 0, b"x")


def test_urls() -> None:
    assert folder_of("file:recordings") == Path("recordings")
    assert folder_of("file:///var/lib/remote-support/recordings") == Path(
        "/var/lib/remote-support/recordings")
    assert folder_of("file://localhost/srv/rec%20ordings") == Path("/srv/rec ordings")
    for bad, why in (("s3://bucket/x", "file: URLs"), ("file://other-host/x", "this machine"),
                     ("file:", "names no folder")):
        with pytest.raises(ConfigError, match=why):
            folder_of(bad)


class TestFileRecordingStore(RecordingStoreContract):
    @pytest.fixture
    async def recordings(self, tmp_path: Path) -> AsyncIterator[FileRecordingStore]:
        store = FileRecordingStore(f"file://{tmp_path / 'recordings'}")
        await store.open()
        yield store
        await store.close()

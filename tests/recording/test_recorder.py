"""The server's recorder against recording stores that stall or fail: the relay's side never
waits, the buffer stays bounded, and the recording ends incomplete with its reason and a
chain over exactly the segments that were written (which verify)."""

from __future__ import annotations

import os
import time

import anyio
import anyio.lowlevel
import pytest
from remote_server.relay.recorder import SessionRecorder, typing_timing

from remote_core.errors import NotFoundError, StoreError
from remote_core.interfaces import RecordingStore
from remote_core.protocol import pb, wrap
from remote_core.recording import verify

pytestmark = pytest.mark.anyio

KB = 1024


class GatedStore(RecordingStore):
    """A recording store in memory whose writes wait while its gate is shut (an object
    store that stalls) or fail while ``failing`` (one that refuses)."""

    def __init__(self) -> None:
        self.segments: dict[tuple[str, int], bytes] = {}
        self.gate = anyio.Event()
        self.gate.set()
        self.failing = False

    async def put_segment(self, recording_id: str, index: int, data: bytes) -> None:
        await self.gate.wait()
        if self.failing:
            raise StoreError("the bucket said 503 Slow Down")
        self.segments[(recording_id, index)] = data

    async def get_segment(self, recording_id: str, index: int) -> bytes:
        try:
            return self.segments[(recording_id, index)]
        except KeyError:
            raise NotFoundError(f"segment {index}") from None

    async def delete_recording(self, recording_id: str) -> None:
        for key in [k for k in self.segments if k[0] == recording_id]:
            del self.segments[key]

    def stall(self) -> None:
        self.gate = anyio.Event()


def recorder(store: GatedStore, buffer: int = 1024 * KB) -> SessionRecorder:
    return SessionRecorder(store, session_id="s-1", agent_id="a-1", buffer_bytes=buffer,
                           segment_bytes=16 * KB)


def written(store: GatedStore, recording_id: str) -> list[bytes]:
    return [store.segments[(recording_id, i)]
            for i in range(sum(1 for k in store.segments if k[0] == recording_id))]


async def test_a_recording_is_written_as_it_goes_and_ends_complete() -> None:
    store = GatedStore()
    rec = recorder(store)
    async with anyio.create_task_group() as group:
        group.start_soon(rec.run)
        record = rec.start("tech-a")
        assert record is not None and rec.start("tech-b") is None  # one at a time
        for i in range(40):
            rec.add(os.urandom(2 * KB), keyframe=i % 4 == 0)
            await anyio.lowlevel.checkpoint()
        finished = await rec.stop("the last technician left")
        group.cancel_scope.cancel()
    assert finished is not None
    assert (finished.state, finished.reason) == ("complete", "the last technician left")
    assert finished.technicians == ("tech-a", "tech-b")  # who watched, in the order they came
    segments = written(store, record.id)
    assert len(segments) == finished.segments > 2
    assert verify(record.id, segments, final=finished.sha256, count=finished.segments).intact
    assert await rec.stop("again") is None


async def test_a_stalled_store_never_holds_up_the_relay_and_cuts_the_recording_short() -> None:
    store = GatedStore()
    rec = recorder(store, buffer=64 * KB)
    async with anyio.create_task_group() as group:
        group.start_soon(rec.run)
        record = rec.start("tech-a")
        assert record is not None
        rec.add(os.urandom(20 * KB), keyframe=True)
        rec.add(os.urandom(1 * KB), keyframe=True)  # seals the first segment
        await anyio.sleep(0.05)  # ...which the store takes
        store.stall()
        started = time.monotonic()
        for _ in range(200):  # 4 MB of frames while the store takes nothing
            rec.add(os.urandom(20 * KB), keyframe=True)
        assert time.monotonic() - started < 1.0  # the relay's side never waited
        store.gate.set()
        finished = await rec.stop("the session ended")
        group.cancel_scope.cancel()
    assert finished is not None and finished.state == "incomplete"
    assert finished.reason.startswith("the recording store fell behind"), finished.reason
    # what went in before the cut is there, whole, and verifies against the row's hash
    segments = written(store, record.id)
    assert len(segments) == finished.segments >= 2
    assert sum(map(len, segments)) == finished.bytes <= 64 * KB + 21 * KB
    assert verify(record.id, segments, final=finished.sha256, count=finished.segments).intact


async def test_a_failing_store_ends_it_incomplete_with_the_stores_words() -> None:
    store = GatedStore()
    rec = recorder(store)
    async with anyio.create_task_group() as group:
        group.start_soon(rec.run)
        record = rec.start("tech-a")
        assert record is not None
        for _ in range(3):
            rec.add(os.urandom(20 * KB), keyframe=True)
        await anyio.sleep(0.05)
        store.failing = True
        for _ in range(3):
            rec.add(os.urandom(20 * KB), keyframe=True)
        finished = await rec.stop("the session ended")
        group.cancel_scope.cancel()
    assert finished is not None and finished.state == "incomplete"
    assert "503 Slow Down" in finished.reason
    segments = written(store, record.id)
    assert len(segments) == finished.segments == 2
    assert verify(record.id, segments, final=finished.sha256, count=finished.segments).intact


async def test_the_end_writes_what_waits_even_without_the_writer_task() -> None:
    """The session's socket ended first (its task group, the writer with it, is gone):
    stop() writes the queued segments itself."""
    store = GatedStore()
    rec = recorder(store)
    record = rec.start("tech-a")
    assert record is not None
    for _ in range(5):
        rec.add(os.urandom(20 * KB), keyframe=True)
    finished = await rec.stop("the session ended: agent disconnected")
    assert finished is not None and finished.state == "complete"
    assert finished.segments == 5
    assert verify(record.id, written(store, record.id), final=finished.sha256,
                  count=5).intact


def test_typing_kept_as_timing_says_when_never_what() -> None:
    key = wrap("key_event", pb.KeyEvent(down=True, key_type=pb.KEY_UNICODE, unicode="p",
                                        vk_code=80, scan_code=25,
                                        modifiers=pb.Modifiers(ctrl=True)))
    assert typing_timing(key) == wrap("key_event", pb.KeyEvent(down=True))
    typed = wrap("recording_note", pb.RecordingNote(kind="terminal_input", technician="tech",
                                                    viewer_id="v1", data=b"secret\r"))
    assert typing_timing(typed) == wrap("recording_note", pb.RecordingNote(
        kind="terminal_input", technician="tech", viewer_id="v1"))

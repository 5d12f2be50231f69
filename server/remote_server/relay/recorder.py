"""Recording a session's relayed messages without ever holding up the relay.

A session's :class:`SessionRecorder` exists when recordings are on. A recording starts
when the first technician watches and stops when the last one leaves or the session ends;
while it runs, the relay hands it each message it forwards (:meth:`SessionRecorder.add`,
which only appends to a segment in memory). Sealed segments wait in a queue, bounded by
``recording_buffer_bytes``, for the session's writer task (:meth:`SessionRecorder.run`) to
put them into the recording store. A store that falls that far behind, or fails, cuts the
recording short: it ends ``incomplete`` with the reason, its chain over the segments that
were written, and the live viewers never wait for it.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import deque
from dataclasses import dataclass

import anyio

from remote_core.errors import StoreError
from remote_core.interfaces import RecordingStore
from remote_core.protocol import Channel, pb, wrap
from remote_core.recording import SEGMENT_BYTES, Chain, RecordingWriter, first_link
from remote_core.records import DEFAULT_TENANT_ID, RecordingRecord, utcnow

__all__ = ["NOTE_NAME", "Finished", "SessionRecorder", "recording_detail", "typing_timing"]

log = logging.getLogger(__name__)

NOTE_NAME = {Channel.TERMINAL: "terminal", Channel.FILES: "files"}
"""How a channel's opening and closing notes name it (``terminal_opened``, ...)."""

FLUSH_TIMEOUT = 30.0
"""Seconds the end of a recording may take to write what is still queued."""


@dataclass(frozen=True)
class Finished:
    """How a recording ended: what its row and its audit event say."""

    record: RecordingRecord
    state: str
    reason: str
    segments: int
    bytes: int
    sha256: str
    technicians: tuple[str, ...]


def recording_detail(finished: Finished) -> dict[str, object]:
    """The ``recording.finished`` audit event's detail."""
    return {"recording_id": finished.record.id, "state": finished.state,
            "reason": finished.reason, "segments": finished.segments,
            "bytes": finished.bytes, "sha256": finished.sha256,
            "technicians": list(finished.technicians)}


def typing_timing(message: bytes) -> bytes:
    """What a technician typed, with only its timing left (``recording_keystrokes =
    timing``): a ``KeyEvent`` keeps whether the key went down or up, never which key,
    character or modifiers; a terminal's input note keeps no bytes."""
    parsed = pb.Message()
    parsed.ParseFromString(message)
    if parsed.WhichOneof("payload") == "key_event":
        down = parsed.key_event.down
        parsed.key_event.Clear()
        parsed.key_event.down = down
    else:
        parsed.recording_note.ClearField("data")
    return parsed.SerializeToString()


@dataclass
class _Queued:
    recording_id: str
    segment: bytearray  # sealed, its header not yet filled in
    data: bytes | None = None  # once chained: its finished bytes, its index, the link after
    index: int = -1
    link: bytes = b""

    def chain_into(self, chain: Chain) -> None:
        """Chain it (once: the writer may be cancelled while this runs in its thread,
        and the next writer finds it done)."""
        if self.data is None:
            self.data = chain.append(self.segment)
            self.index, self.link = chain.segments - 1, chain.link


class _Recording:
    def __init__(self, record: RecordingRecord, segment_bytes: int) -> None:
        self.record = record
        self.writer = RecordingWriter(record.id, segment_bytes=segment_bytes)
        self.chain = Chain(record.id)
        self.began = time.monotonic()
        self.cut = ""  # why it stopped taking messages early, if it did
        self.broken = False  # the store failed: nothing more of it is written
        self.written = 0  # segments in the store
        self.written_bytes = 0
        self.written_link = first_link(record.id)
        self.technicians = list(record.technicians)


class SessionRecorder:
    """One session's recordings, one at a time, and the queue of their sealed segments."""

    def __init__(self, store: RecordingStore, *, session_id: str, agent_id: str,
                 buffer_bytes: int, segment_bytes: int = SEGMENT_BYTES,
                 keystrokes: bool = True, tenant_id: str = DEFAULT_TENANT_ID) -> None:
        self.store = store
        self.tenant_id = tenant_id
        self.keystrokes = keystrokes  # False: key events keep their timing, never their key
        self.session_id = session_id
        self.agent_id = agent_id
        self.buffer_bytes = buffer_bytes
        self.segment_bytes = segment_bytes
        self.current: _Recording | None = None
        self._queue: deque[_Queued] = deque()
        self._queued_bytes = 0
        self._finishing: dict[str, _Recording] = {}  # stopped, their last segments going in
        self._lock = anyio.Lock()
        self._wake = anyio.Event()

    # -- the relay's side: never waits ----------------------------------------------------
    def start(self, technician: str) -> RecordingRecord | None:
        """``technician`` watches: begin a recording unless one runs (which then names them
        too); return a new one's row to insert."""
        if self.current is not None:
            if technician not in self.current.technicians:
                self.current.technicians.append(technician)
            return None
        record = RecordingRecord(str(uuid.uuid4()), session_id=self.session_id,
                                 agent_id=self.agent_id, started_at=utcnow(),
                                 technicians=(technician,), tenant_id=self.tenant_id)
        self.current = _Recording(record, self.segment_bytes)
        return record

    def add(self, message: bytes, *, keyframe: bool = False, typed: bool = False) -> None:
        """Record one message as the relay forwarded it (``typed``: it carries what a
        technician typed, kept as timing only unless ``keystrokes``)."""
        recording = self.current
        if recording is None or recording.cut:
            return
        if typed and not self.keystrokes:
            message = typing_timing(message)
        at_ms = int((time.monotonic() - recording.began) * 1000)
        sealed = recording.writer.add(at_ms, message, keyframe=keyframe)
        if sealed is not None:
            self._enqueue(recording, sealed)

    def note(self, kind: str, technician: str | None, viewer_id: str, *, data: bytes = b"",
             text: str = "") -> None:
        """Record what a viewer's own channel did (a ``RecordingNote``): a terminal's input,
        a file transfer's end, a channel opening or closing."""
        if self.current is None:
            return
        self.add(wrap("recording_note", pb.RecordingNote(
            kind=kind, technician=technician or "", viewer_id=viewer_id, data=data, text=text)),
            typed=kind == "terminal_input")

    def wants_keyframe(self) -> bool:
        """The running recording's segment is full: a keyframe would start the next one, so
        that playback can seek there (the relay asks the agent for one)."""
        recording = self.current
        return recording is not None and not recording.cut and recording.writer.wants_keyframe

    def _enqueue(self, recording: _Recording, segment: bytearray) -> None:
        if self._queued_bytes + len(segment) > self.buffer_bytes:
            recording.cut = (f"the recording store fell behind: {self._queued_bytes} bytes "
                             f"were waiting to be written")
            log.warning("recording %s of session %s cut short: %s", recording.record.id,
                        self.session_id, recording.cut)
            return
        self._queue.append(_Queued(recording.record.id, segment))
        self._queued_bytes += len(segment)
        self._wake.set()

    # -- the writer ----------------------------------------------------------------------
    async def run(self) -> None:
        """Write queued segments as they come, for the session's life."""
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            await self._write_queued()

    async def _write_queued(self, recording_id: str | None = None) -> None:
        """Write the queue's head until it is empty (or holds no segment of
        ``recording_id``); one writer at a time, so segments go in order, once."""
        async with self._lock:
            while self._queue and (recording_id is None
                                   or any(q.recording_id == recording_id for q in self._queue)):
                head = self._queue[0]
                recording = self._recording(head.recording_id)
                if recording is not None and not recording.broken:
                    try:
                        await anyio.to_thread.run_sync(head.chain_into, recording.chain)
                        assert head.data is not None
                        await self.store.put_segment(head.recording_id, head.index, head.data)
                    except (StoreError, OSError, ValueError) as exc:
                        recording.broken = True
                        recording.cut = recording.cut or f"the recording store failed: {exc}"
                        log.warning("recording %s cut short: %s", head.recording_id,
                                    recording.cut)
                    else:
                        recording.written = head.index + 1
                        recording.written_bytes += len(head.data)
                        recording.written_link = head.link
                self._queue.popleft()
                self._queued_bytes -= len(head.segment)

    def _recording(self, recording_id: str) -> _Recording | None:
        if self.current is not None and self.current.record.id == recording_id:
            return self.current
        return self._finishing.get(recording_id)

    async def stop(self, reason: str = "") -> Finished | None:
        """End the running recording (if any): seal it, write what waits (within
        ``FLUSH_TIMEOUT``), and say how it ended. The caller writes the row."""
        recording = self.current
        if recording is None:
            return None
        self.current = None
        self._finishing[recording.record.id] = recording
        try:
            last = None if recording.cut else recording.writer.seal()
            if last is not None:
                self._enqueue(recording, last)
            with anyio.move_on_after(FLUSH_TIMEOUT) as waited:
                await self._write_queued(recording.record.id)
            if waited.cancelled_caught and not recording.cut:
                recording.cut = (f"the recording store did not take the last segments "
                                 f"within {FLUSH_TIMEOUT:.0f} s")
        finally:
            del self._finishing[recording.record.id]
        cut = recording.cut
        return Finished(recording.record, "incomplete" if cut else "complete", cut or reason,
                        recording.written, recording.written_bytes,
                        recording.written_link.hex(), tuple(recording.technicians))

"""A session recording's bytes: segments of relayed messages whose SHA-256 hashes form a chain.

No I/O here: the server's recorder feeds :class:`RecordingWriter` what the relay forwarded,
chains the segments it seals (:class:`Chain`, in a worker thread: hashing megabytes) and
hands them to a recording store; a player or ``remote-support recordings verify`` reads
them back with :func:`read_segment` and :func:`verify`.

A segment is ``MAGIC``, its index and the chain's link before it (``HEADER``), then records:
``at_ms`` (u32, milliseconds since the recording began), the message's length (u32) and the
``Message`` wrapper exactly as the relay forwarded it (video is never re-encoded). A new
segment starts at a keyframe once the current one holds ``segment_bytes``, so playback can
seek to any segment's start; one far past that size is cut wherever it is.

The chain: ``link(-1) = SHA-256(SEED + recording id)`` and ``link(i) = SHA-256(link(i-1) +
SHA-256(segment i))``; the last link is the recording's hash, kept in the database and the
audit log apart from the segments. A changed, missing or reordered segment changes it, and
each segment's header (the link before it) tells which one was touched first.
"""

from __future__ import annotations

import hashlib
import re
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

__all__ = ["HEADER", "MAGIC", "SEGMENT_BYTES", "Chain", "RecordingWriter", "Segment", "Verdict",
           "first_link", "is_recording_id", "next_link", "read_segment", "records", "seal_all",
           "verify"]

MAGIC = b"RSREC01\n"
HEADER = struct.Struct(">8sI32s")  # MAGIC, index, the link before this segment
RECORD = struct.Struct(">II")  # at_ms, length
SEED = b"remote-support recording "
SEGMENT_BYTES = 4 * 1024 * 1024
"""A segment's size at which the next keyframe starts a new one."""
CUT_FACTOR = 4
"""A segment ``CUT_FACTOR`` times that size ends at the next message, keyframe or not."""


_RECORDING_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


def is_recording_id(value: str) -> bool:
    """Whether ``value`` can be a recording's id: one plain name part (no ``/``, ``..`` or
    leading dot), so a store may use it in a path or an object key as it is."""
    return _RECORDING_ID.match(value) is not None


def first_link(recording_id: str) -> bytes:
    """The link before a recording's first segment."""
    return hashlib.sha256(SEED + recording_id.encode()).digest()


def next_link(previous: bytes, segment: bytes) -> bytes:
    return hashlib.sha256(previous + hashlib.sha256(segment).digest()).digest()


class RecordingWriter:
    """Messages in, sealed segments out: cheap enough for the relay's own thread (appends
    only). A sealed segment's header still lacks its place in the chain, which
    :class:`Chain` gives it, hashing, where that may take its time."""

    def __init__(self, recording_id: str, *, segment_bytes: int = SEGMENT_BYTES) -> None:
        self.recording_id = recording_id
        self.segment_bytes = segment_bytes
        self.segments = 0  # sealed so far
        self._open = bytearray()
        self._records = 0

    def add(self, at_ms: int, message: bytes, *, keyframe: bool = False) -> bytearray | None:
        """Append one relayed message; return the segment this closed, if it closed one
        (it closes before a keyframe once full, and after any message far past full)."""
        sealed = None
        if self._records and keyframe and len(self._open) >= self.segment_bytes:
            sealed = self.seal()
        if not self._open:
            self._open += bytes(HEADER.size)  # filled in by Chain.append
        self._open += RECORD.pack(max(0, min(at_ms, 0xFFFFFFFF)), len(message))
        self._open += message
        self._records += 1
        if sealed is None and len(self._open) >= CUT_FACTOR * self.segment_bytes:
            sealed = self.seal()
        return sealed

    @property
    def wants_keyframe(self) -> bool:
        """The open segment is full and waits for a keyframe to start the next one (a
        stream that sends keyframes only on request, raw frames, gets asked for one)."""
        return self._records > 0 and len(self._open) >= self.segment_bytes

    def seal(self) -> bytearray | None:
        """Close the open segment and return it (``None`` when it holds nothing)."""
        if not self._records:
            return None
        segment, self._open = self._open, bytearray()
        self._records = 0
        self.segments += 1
        return segment


class Chain:
    """The hash chain over a recording's segments, appended in order."""

    def __init__(self, recording_id: str) -> None:
        self.link = first_link(recording_id)
        self.segments = 0
        self.bytes = 0

    @property
    def final(self) -> str:
        """The hex hash of the chain so far (the recording's hash once all is in)."""
        return self.link.hex()

    def append(self, segment: bytearray) -> bytes:
        """Give a sealed segment its header (magic, index, the link before it), advance
        the chain over it, and return its finished bytes (SHA-256 of megabytes: call it
        off the event loop's thread)."""
        HEADER.pack_into(segment, 0, MAGIC, self.segments, self.link)
        data = bytes(segment)
        self.link = next_link(self.link, data)
        self.segments += 1
        self.bytes += len(data)
        return data


def seal_all(recording_id: str, sealed: Iterable[bytearray]) -> tuple[list[bytes], Chain]:
    """Sealed segments chained in order: their bytes, and the chain over them."""
    chain = Chain(recording_id)
    return [chain.append(segment) for segment in sealed], chain


@dataclass(frozen=True)
class Segment:
    """A segment read back: where it claims to sit in the chain, and its records."""

    index: int
    previous: bytes
    records: list[tuple[int, bytes]]


def read_segment(data: bytes) -> Segment:
    """Parse a segment.

    :raises ValueError: it is not one (bad magic, or a record runs past its end).
    """
    if len(data) < HEADER.size:
        raise ValueError("shorter than a segment header")
    magic, index, previous = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise ValueError("not a recording segment (bad magic)")
    records = []
    pos = HEADER.size
    view = memoryview(data)
    while pos < len(data):
        if pos + RECORD.size > len(data):
            raise ValueError(f"a record header is cut off at byte {pos}")
        at_ms, length = RECORD.unpack_from(data, pos)
        pos += RECORD.size
        if pos + length > len(data):
            raise ValueError(f"a record of {length} bytes runs past the end at byte {pos}")
        records.append((at_ms, bytes(view[pos:pos + length])))
        pos += length
    return Segment(index, previous, records)


@dataclass(frozen=True)
class Verdict:
    """What :func:`verify` found. ``first_bad`` is the first segment that is not what the
    chain says (``None`` when intact, or when only the count or the final hash is off)."""

    intact: bool
    segments: int
    final: str
    first_bad: int | None = None
    reason: str = ""


def verify(recording_id: str, segments: Iterable[bytes], *, final: str,
           count: int) -> Verdict:
    """Recompute the chain over ``segments`` (in order) and compare it with the recording's
    hash and segment count as the database holds them."""
    link = first_link(recording_id)
    seen = 0
    first_bad: int | None = None
    for index, data in enumerate(segments):
        seen += 1
        if first_bad is None:
            try:
                segment = read_segment(data)
            except ValueError as exc:
                first_bad, why = index, f"segment {index} is damaged: {exc}"
            else:
                if segment.index != index or segment.previous != link:
                    # the header says where it belongs; the one before it was changed, or it
                    # moved (a segment's own header is covered by the next one's link)
                    first_bad = max(0, index - 1) if segment.index == index else index
                    why = (f"segment {first_bad} was changed (segment {index} continues "
                           "another chain)" if segment.index == index else
                           f"segment {index} says it is segment {segment.index}")
        link = next_link(link, data)
    got = link.hex()
    if first_bad is not None:
        return Verdict(False, seen, got, first_bad, why)
    if seen != count:
        return Verdict(False, seen, got, None, f"{seen} segments where {count} were written")
    if got != final.lower():
        return Verdict(False, seen, got, seen - 1 if seen else None,
                       f"segment {seen - 1} (the last) does not match the recorded hash"
                       if seen else "no segment where the recorded hash says some")
    return Verdict(True, seen, got)


def records(segments: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """Every record of ``segments`` in order: ``(at_ms, message bytes)``."""
    for data in segments:
        yield from read_segment(data).records

"""Pictures too large for one message, sent in parts that each fit (CONTRACT 1, "Raw frames").

A raw keyframe of a 3840x2160 screen is 33 MB of BGRA before Zstandard;
desktop content compresses far below the shipped 16 MiB cap per message, but
noise (photos, video, dithering) does not, and the server closes a larger
message with 1009. What does not fit goes as:

1. a **keyframe part**: an ordinary keyframe (the whole display, one
   Zstandard frame of ``width*height*4`` bytes) whose top rows are the screen
   and whose other rows are opaque black, which compresses to almost nothing;
2. then ordinary **incremental frames** carrying the rest as dirty
   rectangles, each under :data:`PART_BYTES`.

Every message is a raw frame exactly as CONTRACT 1 defines it, so a viewer
draws it as it draws any other; and the relay's rules hold unchanged: a
viewer that skips to the next keyframe resumes at the keyframe part and the
parts after it build on it. Each part is compressed as it is packed, one
Zstandard block per slice of rows, so its size is known before it is sent.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import zstandard

from remote_core.protocol import DEFAULT_MAX_MESSAGE_BYTES
from remote_core.types import Rect

from .dirty import TILE
from .pixels import Flat, rect_bytes

__all__ = ["MESSAGE_LIMIT", "PART_BYTES", "PLACEHOLDER", "Packed", "fits", "keyframe_part",
           "pack_rects", "rotate"]

MESSAGE_LIMIT = DEFAULT_MAX_MESSAGE_BYTES
"""The shipped cap per message (the agent cannot learn a server's own setting)."""

PART_BYTES = 2 * 1024 * 1024
"""Largest part. Three parts in flight (the agent's flow window) stay under a viewer's
8 MiB outbox at the relay, so a viewer that keeps up never loses one to its drop policy
(a lost part would cost a new keyframe)."""

SLICE_BYTES = 256 * 1024
"""Rows compressed (and sized) at a time, in whole tile rows: a part ends at most about
this much (or one tile row) under its budget."""

PLACEHOLDER = bytes((0, 0, 0, 255))
"""Opaque black: what a keyframe part shows where the screen has not arrived yet."""

_TAIL_RESERVE = 64 * 1024  # the placeholder rows: about 4 bytes per 128 KiB block


def headroom(rect_count: int) -> int:
    """Bytes of a message besides the pixels: the framing and up to 26 per rectangle."""
    return 1024 + 32 * rect_count


def fits(payload_bytes: int, rect_count: int, limit: int = MESSAGE_LIMIT) -> bool:
    """Whether a frame of this payload and rectangle count is one message under ``limit``."""
    return payload_bytes + headroom(rect_count) <= limit


def _worst(raw_bytes: int) -> int:
    """An upper bound on Zstandard's output for ``raw_bytes`` of incompressible input."""
    return raw_bytes + raw_bytes // 1024 + 64


def _slice_rows(width: int, budget: int) -> int:
    """Rows per slice: whole tile rows, about :data:`SLICE_BYTES` (less for a small budget)."""
    return max(TILE, min(SLICE_BYTES, budget // 4) // (width * 4) // TILE * TILE)


def _slices(image: Flat, width: int, rect: Rect,
            budget: int) -> Iterator[tuple[bytes | bytearray | memoryview, int]]:
    """``rect``'s rows in slices that end on tile rows, so where a part stops is where
    the next comparison's tile-aligned rectangles start (nothing is sent twice); each
    slice as its pixels and its row count."""
    rows = _slice_rows(rect.width, budget)
    y, end = rect.y, rect.y + rect.height
    while y < end:
        stop = min((y // rows + 1) * rows, end)
        yield rect_bytes(image, width, Rect(rect.x, y, rect.width, stop - y)), stop - y
        y = stop


def keyframe_part(image: Flat, width: int, height: int, compressor: zstandard.ZstdCompressor,
                  budget: int = PART_BYTES) -> tuple[bytes, int]:
    """The keyframe part of ``image``: one Zstandard frame of the whole display, real
    rows from the top while they fit ``budget``, placeholder rows after; and how many
    rows are real (at least one slice)."""
    w, h = width, height
    stream = compressor.compressobj(size=h * w * 4)
    out: list[bytes] = []
    total, rows = 0, 0
    for part, count in _slices(image, w, Rect(0, 0, w, h), budget):
        if rows and total + _worst(len(part)) + _TAIL_RESERVE > budget:
            break
        out += [stream.compress(part), stream.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)]
        total += len(out[-1]) + len(out[-2])
        rows += count
    step = _slice_rows(w, budget)
    blank = PLACEHOLDER * (step * w)
    for y in range(rows, h, step):
        out.append(stream.compress(blank[:min(step, h - y) * w * 4]))
    out.append(stream.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH))
    return b"".join(out), rows


@dataclass(frozen=True)
class Packed:
    """One incremental part: its payload and the rectangles it carries, in order;
    ``rest`` is what did not fit, in order."""

    data: bytes
    compressed: bool
    rects: list[Rect]
    rest: list[Rect]


def pack_rects(image: Flat, width: int, rects: Sequence[Rect],
               compressor: zstandard.ZstdCompressor, budget: int = PART_BYTES, *,
               soft: bool = False) -> Packed:
    """As many of ``rects`` as fit ``budget`` (the last one cut between rows if need be),
    compressed, or raw when that is smaller; the first slice always goes.

    What fits is measured by compressing slice by slice, into the one frame that goes
    (its header then declares its size, as every other frame's does).
    ``soft``: slices are taken until the budget is reached, so a part may pass it by
    one slice (for a budget far under the message cap: a redraw's parts), where by
    default a slice is taken only if it fits even incompressible.
    """
    stream = compressor.compressobj()
    total = 0
    out: list[bytes] = []
    raw: list[bytes | bytearray | memoryview] = []
    taken: list[Rect] = []
    for index, rect in enumerate(rects):
        rows = 0
        for part, count in _slices(image, width, rect, budget):
            if raw and (total >= budget if soft else total + _worst(len(part)) > budget):
                break
            out += [stream.compress(part), stream.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)]
            total += len(out[-1]) + len(out[-2])
            raw.append(part)
            rows += count
        if rows:
            taken.append(Rect(rect.x, rect.y, rect.width, rows))
        if rows < rect.height:
            rest = [Rect(rect.x, rect.y + rows, rect.width, rect.height - rows),
                    *rects[index + 1:]]
            break
    else:
        rest = []
    out.append(stream.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH))
    size = sum(len(part) for part in raw)
    data = _declare_size(b"".join(out), size)
    if len(data) >= size:
        return Packed(b"".join(raw), False, taken, rest)
    return Packed(data, True, taken, rest)


def _declare_size(frame: bytes, size: int) -> bytes:
    """``frame``, one Zstandard frame as a stream writes it (its content size unknown when
    it began), with ``size`` written into its header as its content size (RFC 8878,
    3.1.1.1), so that a decoder sizes its output from the frame as it does for one
    compressed in one go. A frame that declares a size already is returned as it is."""
    descriptor = frame[4]
    if descriptor & 0xE0:  # a content size, or a single segment (which carries one)
        return frame
    end = 6 + (0, 1, 2, 4)[descriptor & 3]  # past the window descriptor and dictionary id
    # the size's field: four bytes (a part is megabytes at most)
    return b"".join((frame[:4], bytes((descriptor | 2 << 6,)), frame[5:end],
                     size.to_bytes(4, "little"), frame[end:]))


def rotate(rects: Sequence[Rect], from_y: int) -> list[Rect]:
    """``rects`` (apart, top to bottom) reordered to start at row ``from_y`` (a rectangle
    across it is cut there) and wrap around, so parts sweep down the screen and a busy
    top cannot starve the bottom."""
    after: list[Rect] = []
    before: list[Rect] = []
    for r in rects:
        if r.y >= from_y:
            after.append(r)
        elif r.y + r.height <= from_y:
            before.append(r)
        else:
            before.append(Rect(r.x, r.y, r.width, from_y - r.y))
            after.append(Rect(r.x, from_y, r.width, r.y + r.height - from_y))
    return sorted(after, key=lambda r: (r.y, r.x)) + before

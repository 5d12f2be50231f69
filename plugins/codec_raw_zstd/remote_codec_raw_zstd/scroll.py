"""Finding a scroll: a band of a changed rectangle that is what the viewers have, moved up
or down.

A scrolled page changes every pixel of its rectangle, yet all but the newly shown lines
are already on the viewer's screen, a few rows away. Sent as a move (a ``CopyRect``, as
VNC does) plus the new lines, a scroll costs what typing costs instead of a whole page.

Rows are matched by a sample of their bytes (every :data:`STEP` th, over the middle half
of the rectangle's columns): the samples of the rows the viewers have are indexed, the
current rows look theirs up, and the shift most rows agree on is the candidate (rows
found in many places, such as blank ones, do not vote). On rows that voted for it, the
widest run of columns that moved exactly is the move's width (a page scrolls, its
margins stay); then the longest run of rows that match exactly over that width is its
height. Nothing is guessed: a move covers only pixels equal, byte for byte, to the
pixels it copies.

A page scrolls on: the last move found (a ``hint``) is tried first, and kept when every
row it can bring in moved exactly, which skips the vote (three quarters of the search).
"""

from __future__ import annotations

import re
from collections import defaultdict

from remote_core.types import CopyRect, Rect

from .pixels import Flat

__all__ = ["MIN_ROWS", "STEP", "Scroll", "find_scroll"]

MIN_ROWS = 48
"""Fewest rows a move covers: below that, sending the pixels costs about as little."""

MIN_COLUMNS = 64
"""Fewest columns a move covers."""

STEP = 7
"""A row is indexed by every this many of its bytes: a few hundred bytes spread over the
whole row tell text rows apart at a fraction of the cost of the row."""

_COMMON = 4
"""A sample found in more rows than this (blank rows, rules) does not vote."""

_MIN_VOTES = 8
"""Rows that must agree on a shift before it is checked."""

_COLUMN_ROWS = 48
"""About how many of those rows tell which columns moved."""

_HINT_ROWS = 8
"""Rows spread over a rectangle that must have moved as the hint says before all are
checked: a change that is not the same scroll costs a few comparisons."""

_SAME = re.compile(rb"\x00+")


class Scroll:
    """A move found in one rectangle: the copy, and the rows of the rectangle it leaves."""

    __slots__ = ("copy", "rest")

    def __init__(self, copy: CopyRect, rest: list[Rect]) -> None:
        self.copy = copy
        self.rest = rest


def find_scroll(previous: bytearray, current: Flat, width: int, rect: Rect,
                hint: CopyRect | None = None) -> Scroll | None:
    """The largest vertical move, within ``rect``, of ``previous``'s rows to where
    ``current`` shows them; ``None`` when there is none of :data:`MIN_ROWS` rows or more.

    Both are flat BGRA frames ``width`` pixels wide. The move may be narrower than
    ``rect`` (a scrolled page inside a changed rectangle that also holds its margins).
    ``hint``, the last move found, is taken (its columns and shift) when the whole of
    ``rect``'s height it can cover moved by it.
    """
    if rect.height < 2 * MIN_ROWS or rect.width < MIN_COLUMNS:
        return None
    if hint is not None:
        found = _hinted(previous, current, width, rect, hint)
        if found is not None:
            return found
    # Vote on the middle half of the columns, which a scrolled page inside ``rect`` covers.
    middle = Rect(rect.x + rect.width // 4, rect.y, rect.width // 2, rect.height)
    voted = _likely_shift(previous, current, width, middle)
    if voted is None:
        return None
    shift, voters = voted
    columns = _moving_columns(previous, current, width, rect, shift, voters)
    if columns is None:
        return None
    x0, x1 = columns
    top, rows = _matching_run(previous, current, width, Rect(x0, rect.y, x1 - x0, rect.height),
                              shift)
    return _scroll(rect, x0, x1, top, rows, shift) if rows >= MIN_ROWS else None


def _hinted(previous: bytearray, current: Flat, width: int, rect: Rect,
            hint: CopyRect) -> Scroll | None:
    """``hint``'s move again, within ``rect``, if every row of ``rect`` it can bring in
    (all but ``shift`` of them) shows ``previous``'s moved exactly by it."""
    shift, x0, x1 = hint.src_y - hint.y, hint.x, hint.x + hint.width
    rows = rect.height - abs(shift)
    if (not shift or rows < MIN_ROWS or x0 < rect.x or x1 > rect.x + rect.width
            or x1 - x0 < MIN_COLUMNS):
        return None
    stride, length, first = width * 4, (x1 - x0) * 4, max(0, -shift)
    view = memoryview(current)
    for y in range(first, first + rows, max(1, rows // _HINT_ROWS)):
        here = ((rect.y + y) * width + x0) * 4
        if not previous.startswith(view[here:here + length], here + shift * stride):
            return None
    band = Rect(x0, rect.y, x1 - x0, rect.height)
    top, run = _matching_run(previous, current, width, band, shift)
    return _scroll(rect, x0, x1, top, run, shift) if run == rows else None


def _scroll(rect: Rect, x0: int, x1: int, top: int, rows: int, shift: int) -> Scroll:
    """The move of columns ``x0`` to ``x1`` of ``rows`` of ``rect``'s rows from ``top``
    on, by ``shift``, and the parts of ``rect`` around it."""
    y = rect.y + top
    copy = CopyRect(x0, y, x1 - x0, rows, x0, y + shift)
    rest = [Rect(rect.x, rect.y, rect.width, top),
            Rect(rect.x, y, x0 - rect.x, rows),
            Rect(x1, y, rect.x + rect.width - x1, rows),
            Rect(rect.x, y + rows, rect.width, rect.height - top - rows)]
    return Scroll(copy, [r for r in rest if r.width and r.height])


def _samples(buffer: Flat, width: int, rect: Rect) -> list[bytes]:
    """Each of ``rect``'s rows as every :data:`STEP` th of its bytes, top to bottom."""
    stride, length = width * 4, rect.width * 4
    start = (rect.y * width + rect.x) * 4
    rows = range(start, start + rect.height * stride, stride)
    if (isinstance(buffer, memoryview) and isinstance(buffer.obj, bytearray)
            and buffer.nbytes == len(buffer.obj)):  # a view of all of one (a capture's)
        buffer = buffer.obj
    if isinstance(buffer, bytearray):  # a strided slice of it copies only the sample
        return [bytes(buffer[offset:offset + length:STEP]) for offset in rows]
    return [bytes(buffer[offset:offset + length])[::STEP]  # a strided view's copy is slow
            for offset in rows]


def _likely_shift(previous: bytearray, current: Flat, width: int,
                  rect: Rect) -> tuple[int, list[int]] | None:
    """The shift (rows down in ``previous`` from where ``current`` shows them) that the
    most distinctive rows agree on, if enough do, and those rows (of ``rect``)."""
    where: defaultdict[bytes, list[int]] = defaultdict(list)
    for y, sample in enumerate(_samples(previous, width, rect)):
        where[sample].append(y)
    votes: defaultdict[int, list[int]] = defaultdict(list)
    for y, sample in enumerate(_samples(current, width, rect)):
        found = where.get(sample)
        if found and len(found) <= _COMMON:
            for source in found:
                if source != y:
                    votes[source - y].append(y)
    if not votes:
        return None
    shift, voters = max(votes.items(), key=lambda item: len(item[1]))
    return (shift, voters) if len(voters) >= _MIN_VOTES else None


def _moving_columns(previous: bytearray, current: Flat, width: int, rect: Rect, shift: int,
                    voters: list[int]) -> tuple[int, int] | None:
    """The widest run of ``rect``'s columns that, on rows that voted for ``shift``, are
    exactly ``previous``'s moved by it: ``(first, end)`` in display pixels, or ``None``
    when narrower than :data:`MIN_COLUMNS`."""
    stride, length = width * 4, rect.width * 4
    diff = 0
    for y in voters[::max(1, len(voters) // _COLUMN_ROWS)]:
        here = ((rect.y + y) * width + rect.x) * 4
        there = here + shift * stride
        diff |= (int.from_bytes(previous[there:there + length], "little")
                 ^ int.from_bytes(current[here:here + length], "little"))
    changed = diff.to_bytes(length, "little")
    best = (0, 0)
    for run in _SAME.finditer(changed):
        first, end = -(-run.start() // 4), run.end() // 4  # whole pixels only
        if end - first > best[1] - best[0]:
            best = (first, end)
    if best[1] - best[0] < MIN_COLUMNS:
        return None
    return rect.x + best[0], rect.x + best[1]


def _matching_run(previous: bytearray, current: Flat, width: int, rect: Rect,
                  shift: int) -> tuple[int, int]:
    """The longest run of ``rect``'s rows that ``current`` shows exactly as ``previous``
    has them ``shift`` rows further down: its first row (in ``rect``) and its length.
    (``startswith`` compares in place, where slices of both would be copied first.)"""
    stride, length = width * 4, rect.width * 4
    first = max(0, -shift)
    last = min(rect.height, rect.height - shift)
    best = (0, 0)
    run_start = first
    for y in range(first, last + 1):
        if y < last:
            here = ((rect.y + y) * width + rect.x) * 4
            there = here + shift * stride
            if previous.startswith(current[here:here + length], there):
                continue
        if y - run_start > best[1]:
            best = (run_start, y - run_start)
        run_start = y + 1
    return best

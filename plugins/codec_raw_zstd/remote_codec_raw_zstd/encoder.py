"""Raw BGRA frames, Zstandard-compressed, sending only what changed (CONTRACT 1, "Raw frames")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import zstandard

from remote_core.codecs import KeyframeClock, zstd_level
from remote_core.interfaces import Encoder
from remote_core.types import CopyRect, EncodedFrame, EncoderConfig, Moves, Rect

from .dirty import clip_rects, find_dirty
from .estimate import estimate_size
from .extensions import COPY_EXTENSION, KEEP_EXTENSION, OVER_EXTENSION
from .parts import MESSAGE_LIMIT, PART_BYTES, PLACEHOLDER, fits, keyframe_part, pack_rects, rotate
from .pixels import copy_rect, flat, move_rect, rect_bytes
from .scroll import find_scroll

__all__ = ["FULL_FRAME_SHARE", "RawZstdEncoder"]

_SCROLL_TRIES = 3
"""Largest changed rectangles checked for a scroll, each frame."""

_LEAST_BAND = 8
"""Fewest rows a keyframe's part sweeps (over a slow link, the rows its bytes carry)."""

FULL_FRAME_SHARE = 0.6
"""When this share of the frame changed, a whole frame is cheaper than gathering rectangles."""


class RawZstdEncoder(Encoder):
    """Keeps the picture the viewers have and sends the dirty rectangles against it.

    A whole frame (``is_keyframe``) goes out first, on request, on a size
    change, when most of the screen changed, and at least every 10 s. When every
    viewer draws moves (:data:`COPY_EXTENSION`), a scroll goes as a move of what they
    have plus the rows it uncovers (:meth:`find_moves`, :mod:`.scroll`). A frame
    that would not fit one message under ``message_limit`` goes in parts
    (:mod:`.parts`); :attr:`pending` then stays true until the rest is sent. When every
    viewer draws over another codec's picture (:data:`OVER_EXTENSION`), :meth:`redraw`
    sends the whole picture again as incremental frames, sweeping down the screen, and
    :meth:`adopt` goes on from another codec's picture, sending only what changes. When
    every viewer keeps its picture below a keyframe part (:data:`KEEP_EXTENSION`),
    :meth:`keyframe_in_parts` sends the next keyframe as such a part and the rest as a
    redraw, what changes meanwhile going between its parts. :meth:`estimate` tells about
    what a change would take from a sample of it (:mod:`.estimate`).

    :param message_limit: the largest message (the shipped 16 MiB cap).
    :param part_bytes: the largest part of a frame that does not fit.
    """

    def __init__(self, config: EncoderConfig, clock: KeyframeClock | None = None, *,
                 message_limit: int = MESSAGE_LIMIT, part_bytes: int = PART_BYTES) -> None:
        self._compressor = zstandard.ZstdCompressor(level=zstd_level(config.preset))
        self._previous = bytearray()  # what the viewers have, flat
        self._size: tuple[int, int] | None = None  # its width and height
        self._clock = clock or KeyframeClock()
        self._limit = message_limit
        self._part_bytes = part_bytes
        self._owing = False
        self._next_y = 0  # where the next part starts, so parts sweep the screen
        self._moves = COPY_EXTENSION in config.extensions
        self._last_move: CopyRect | None = None  # tried first: a page scrolls on
        self._over = OVER_EXTENSION in config.extensions
        self._sweep: int | None = None  # a redraw's next row: from here down, all is owed
        self._sweep_bytes = PART_BYTES  # a redraw's part
        self._keep = KEEP_EXTENSION in config.extensions
        self._keyframe_bytes: int | None = None  # the next keyframe's first part
        self._sweep_all = False  # a redraw after a keyframe part: changes below it go too
        self._band_rows = _LEAST_BAND  # the rows such a redraw sweeps a part
        self._band_waited = False  # its last part carried changes alone
        self._left = False  # its last part left changes for later: a comparison knows them
        self._adopted = False  # the viewers' picture is another codec's, until a keyframe

    @property
    def pending(self) -> bool:
        """True while the viewers lack part of the last picture (it came in parts)."""
        return self._owing

    def redraw(self, part_bytes: int) -> bool:
        """The viewers show another codec's picture: send the whole screen again, top to
        bottom, in incremental frames of about ``part_bytes`` (up to :data:`PART_BYTES`),
        each with what changed above the rows swept so far."""
        if not self._over or self._size is None:
            return False
        self._sweep, self._owing, self._sweep_all, self._adopted = 0, True, False, False
        self._sweep_bytes = max(1, min(part_bytes, PART_BYTES))
        return True

    def adopt(self, image: Any) -> bool:
        """The viewers show ``image`` as another codec drew it: it is their picture from
        here, and frames send what changes over it. Its keyframe clock starts again there
        (the agent sends the keyframes due: another codec's, while this one's picture
        would be too big for the link)."""
        if not self._over:
            return False
        current, w, h = flat(image)
        self._remember(current, w, h, rows=h)
        self._owing, self._sweep, self._sweep_all = False, None, False
        self._keyframe_bytes, self._adopted = None, True
        self._clock.sent()
        return True

    def keyframe_in_parts(self, part_bytes: int) -> bool:
        """The next keyframe, if over ``part_bytes``, goes as a keyframe part of about that
        size (``EncodedFrame.rows``) and the rest as a redraw in bands of that size, what
        changes meanwhile going between them (:meth:`_redraw_part`): below the part, the
        viewers in step show the picture this encoder last sent. A keyframe of a new size
        goes whole, and so does one after :meth:`adopt` (below a part, the viewers would
        keep another codec's picture)."""
        if not self._keep or self._adopted:
            return False
        self._keyframe_bytes = max(1, min(part_bytes, PART_BYTES))
        return True

    def repeat_keyframe(self) -> EncodedFrame | None:
        """The viewers' picture (what this encoder last sent them) as a keyframe marked
        ``repeat``; ``None`` before the first picture, while parts are owed, or when it
        would not fit one message, or after :meth:`adopt` (the viewers show another codec's
        picture)."""
        if self._size is None or self._owing or self._sweep is not None or self._adopted:
            return None
        whole = self._squeeze(self._previous, 0)
        if whole is None:
            return None
        self._clock.sent()
        w, h = self._size
        return _frame(w, h, *whole, keyframe=True, rects=[], repeat=True)

    @property
    def redrawn(self) -> float | None:
        if self._sweep is None or self._size is None:
            return None
        return self._sweep / self._size[1]

    def find_moves(self, image: Any, dirty: Sequence[Rect] | None = None) -> Moves | None:
        """A scroll in one of the largest changed rectangles, as one move and the rows
        left to send; ``None`` while the viewers do not all draw moves, while parts are
        owed (but for the sweep after a keyframe part: below it, the viewers in step show
        this encoder's picture), when a keyframe is due, or when nothing scrolled in what
        the capture said changed. Without the capture's word it compares for itself, and
        then answers even when nothing scrolled (no copies), so that :meth:`encode` does
        not compare the frame again."""
        if not self._moves or (self._owing and not self._sweep_all) or self._clock.due():
            return None
        current, w, h = flat(image)
        if self._size != (w, h):
            return None
        rects = (clip_rects(dirty, w, h) if dirty is not None
                 else find_dirty(self._previous, current, w, h))
        largest = sorted(range(len(rects)), key=lambda i: -rects[i].width * rects[i].height)
        for index in largest[:_SCROLL_TRIES]:
            scroll = find_scroll(self._previous, current, w, rects[index], self._last_move)
            if scroll is not None:
                self._last_move = scroll.copy
                rest = (*rects[:index], *scroll.rest, *rects[index + 1:])
                return Moves(copies=(scroll.copy,), rest=rest)
        return None if dirty is not None else Moves(copies=(), rest=tuple(rects))

    def estimate(self, image: Any, rects: Sequence[Rect]) -> int:
        current, w, h = flat(image)
        return estimate_size(current, w, clip_rects(rects, w, h), self._compressor)

    def encode(self, image: Any, *, keyframe: bool = False,
               dirty: Sequence[Rect] | None = None,
               moves: Moves | None = None) -> EncodedFrame | None:
        current, w, h = flat(image)
        full = keyframe or self._size != (w, h) or self._clock.due()
        if not full and self._sweep is not None:
            return self._redraw_part(current, w, h, self._sweep, moves, dirty)
        if not full:
            copies: tuple[CopyRect, ...] = ()
            if moves is not None and not self._owing:
                copies, rects = moves.copies, list(moves.rest)
            else:
                # While parts are owed, only a comparison knows everything the viewers lack.
                rects = (clip_rects(dirty, w, h) if dirty is not None and not self._owing
                         else find_dirty(self._previous, current, w, h))
            if not rects and not copies:
                self._owing = False
                return None
            full = (not self._owing
                    and sum(r.width * r.height for r in rects) >= FULL_FRAME_SHARE * w * h)
            if not full:
                return self._delta(current, w, h, rects, copies)
        return self._keyframe(current, w, h)

    def _keyframe(self, current: memoryview, w: int, h: int) -> EncodedFrame:
        self._clock.sent()
        self._sweep, self._sweep_all, self._adopted = None, False, False
        part, self._keyframe_bytes = self._keyframe_bytes, None
        # Whether the picture is over a part, told from a sample of it, which comes within a
        # tenth of the whole (compressing all of it to know was a third of what the
        # keyframe due cost over a slow link).
        about = (estimate_size(current, w, [Rect(0, 0, w, h)], self._compressor)
                 if part is not None and self._size == (w, h) else 0)
        if part is not None and about * 10 > part * 9:
            data, rows = keyframe_part(current, w, h, self._compressor, part)
            if rows < h:  # the viewers keep the rest as it is: so does their model of it
                self._previous[:rows * w * 4] = current[:rows * w * 4]
                self._sweep, self._sweep_bytes, self._sweep_all = rows, part, True
                self._band_waited, self._left = False, True  # (what changed below it)
                # rows a part's bytes carry, at the whole picture's bytes a row
                self._band_rows = max(_LEAST_BAND, part * h // about)
                self._owing = True
                return _frame(w, h, data, True, keyframe=True, rects=[], rows=rows)
        whole = self._squeeze(current, 0)
        if whole is not None:
            self._remember(current, w, h, rows=h)
            self._owing = False
            return _frame(w, h, *whole, keyframe=True, rects=[])
        data, rows = keyframe_part(current, w, h, self._compressor, self._part_bytes)
        self._remember(current, w, h, rows=rows)
        self._owing, self._next_y = True, rows
        return _frame(w, h, data, True, keyframe=True, rects=[], rows=rows if self._keep else 0)

    def _delta(self, current: memoryview, w: int, h: int, rects: list[Rect],
               copies: tuple[CopyRect, ...] = ()) -> EncodedFrame:
        previous = self._previous
        for c in copies:  # the viewers move their picture first, then draw the rest
            move_rect(previous, w, c)
        if not self._owing:  # the rest of a picture in parts goes in parts too
            payload = b"".join(rect_bytes(current, w, r) for r in rects)
            whole = self._squeeze(payload, len(rects))
            if whole is not None:
                for r in rects:
                    copy_rect(previous, current, w, r)
                self._owing = False
                return _frame(w, h, *whole, keyframe=False, rects=rects, copies=copies)
        packed = pack_rects(current, w, rotate(rects, self._next_y), self._compressor,
                            self._part_bytes)
        for r in packed.rects:
            copy_rect(previous, current, w, r)
        self._owing = bool(packed.rest)
        self._next_y = packed.rest[0].y if packed.rest else 0
        return _frame(w, h, packed.data, packed.compressed, keyframe=False, rects=packed.rects,
                      copies=copies)

    def _redraw_part(self, current: memoryview, w: int, h: int, sweep: int,
                     moves: Moves | None = None,
                     dirty: Sequence[Rect] | None = None) -> EncodedFrame:
        """The next part of a redraw: what changed above row ``sweep`` (sent already, so
        a comparison knows), then the rows from ``sweep`` down, whatever they were.

        After a keyframe part, what changed anywhere goes alone (the viewers in step show
        the picture below ``sweep``, so a typed word neither waits for the sweep nor goes
        with a band of it), or, when the last part went so, with a band of about a part's
        rows from ``sweep``, which takes what changed within it (a pixel goes once a
        frame); with no change, the band alone. A scroll goes as its ``moves`` and the
        rows they uncover, alone: the sweep waits while a page scrolls, and goes back
        up to the rows a move brought from below it (:func:`_behind`). Changes alone are
        not held to a band's bytes: cut short, they would pile up behind the sweep. What
        changed is what the capture says (``dirty``) after a part that left none behind:
        over a slow link the keyframe due goes in some sixty parts, and a comparison of
        the whole screen for each was half of what a still screen cost the agent."""
        copies: tuple[CopyRect, ...] = ()
        budget, alone = self._sweep_bytes, False
        if self._sweep_all:
            copies = () if moves is None else moves.copies
            for c in copies:  # the viewers move their picture first, then draw the rest
                move_rect(self._previous, w, c)
                sweep = _behind(sweep, c)
            band = Rect(0, sweep, w, min(self._band_rows, h - sweep))
            # the rows the moves uncover, or what the capture saw; if the last part left
            # changes (or the capture does not say), a comparison
            reported = (list(moves.rest) if copies and moves is not None
                        else None if dirty is None else clip_rects(dirty, w, h))
            changed = (reported if reported is not None and not self._left
                       else find_dirty(self._previous, current, w, h))
            alone = bool(copies) or (bool(changed) and not self._band_waited)
            self._band_waited = alone
            rects = changed if alone else [*_outside(changed, band), band]
            budget = self._part_bytes if alone else budget
        else:
            above = [] if sweep == 0 else [
                Rect(r.x, r.y, r.width, min(r.y + r.height, sweep) - r.y)
                for r in find_dirty(self._previous, current, w, h) if r.y < sweep]
            band = Rect(0, sweep, w, h - sweep)
            rects = [*above, band]
        packed = pack_rects(current, w, rects, self._compressor, budget, soft=True)
        for r in packed.rects:
            copy_rect(self._previous, current, w, r)
        self._left = len(packed.rest) > (0 if alone else 1)  # (a band is last)
        # What is left ends with the band, whole or cut; with none, the band went. (A part
        # of changes alone leaves the sweep where it is, or where its moves put it.)
        self._sweep = (sweep if self._sweep_all and self._band_waited
                       else packed.rest[-1].y if packed.rest
                       else band.y + band.height if band.y + band.height < h else None)
        self._owing = self._sweep is not None
        self._sweep_all = self._sweep_all and self._owing
        self._next_y = 0
        return _frame(w, h, packed.data, packed.compressed, keyframe=False, rects=packed.rects,
                      copies=copies)

    def _squeeze(self, payload: bytes | bytearray | memoryview,
                 rect_count: int) -> tuple[bytes, bool] | None:
        """``(data, compressed)``: the payload compressed, or as it is when that is no
        smaller; ``None`` when that does not fit one message."""
        data = self._compressor.compress(payload)
        if len(data) < len(payload):
            return (data, True) if fits(len(data), rect_count, self._limit) else None
        if not fits(len(payload), rect_count, self._limit):
            return None
        return bytes(payload), False

    def _remember(self, current: memoryview, w: int, h: int, rows: int) -> None:
        """The viewers now have ``current``'s first ``rows`` rows and placeholder below."""
        split = rows * w * 4
        if self._size != (w, h):
            self._previous = bytearray(len(current))
            self._size = (w, h)
        self._previous[:split] = current[:split]  # reuse the buffer: no 8 MB per frame
        if rows < h:
            self._previous[split:] = PLACEHOLDER * ((h - rows) * w)


def _frame(w: int, h: int, data: bytes, compressed: bool, *, keyframe: bool,
           rects: list[Rect], copies: tuple[CopyRect, ...] = (), rows: int = 0,
           repeat: bool = False) -> EncodedFrame:
    return EncodedFrame(data=data, keyframe=keyframe, width=w, height=h, rects=tuple(rects),
                        compressed=compressed, copies=copies, rows=rows, repeat=repeat)


def _behind(sweep: int, move: CopyRect) -> int:
    """The sweep's row after ``move``: rows moved up from below the sweep are, for a viewer
    that started at the keyframe part, the placeholder or a picture it missed frames of,
    so the sweep goes back up to the first of them (above it, every viewer has the
    screen)."""
    up = move.src_y - move.y
    if up <= 0 or move.src_y + move.height <= sweep:
        return sweep
    return min(sweep, max(move.y, sweep - up))


def _outside(rects: list[Rect], band: Rect) -> list[Rect]:
    """``rects`` without the rows of ``band`` (which spans the frame's width): the parts
    above it and below it."""
    top, bottom = band.y, band.y + band.height
    out = []
    for r in rects:
        if r.y < top:
            out.append(Rect(r.x, r.y, r.width, min(r.y + r.height, top) - r.y))
        if r.y + r.height > bottom:
            y = max(r.y, bottom)
            out.append(Rect(r.x, y, r.width, r.y + r.height - y))
    return out

"""Finding what changed between two screen images, as a few rectangles.

Plain byte comparisons, which run at memory speed: one comparison settles the
unchanged frame, one per band of :data:`TILE` rows skips the bands that did
not change, and in a band that did, the rows that differ are XOR-ed as big
integers and OR-ed together, so one pass tells which tile columns changed.
Dirty tiles are merged into horizontal runs, and runs that touch in
consecutive tile rows into their bounding rectangle, so a typed word or a
scrolled page is one or a few rectangles rather than hundreds of tiles.
"""

from __future__ import annotations

from collections.abc import Iterable

from remote_core.types import Rect

from .pixels import Flat

__all__ = ["TILE", "clip_rects", "find_dirty"]

TILE = 32
"""Tile edge in pixels: small enough to keep typing updates small, large enough to merge."""

Runs = list[tuple[int, int]]  # [first tile, end tile) of each run of dirty tiles in a tile row


def find_dirty(previous: bytearray, current: Flat, width: int, height: int,
               tile: int = TILE) -> list[Rect]:
    """Tile-aligned rectangles (clipped to the frame) covering every changed pixel.

    Both are flat BGRA frames of ``width`` x ``height``; ``previous`` is a
    ``bytearray`` so that comparisons with it run as one ``memcmp``. An empty
    list means the frames are identical.
    """
    if previous == current:
        return []
    stride = width * 4
    tile_bytes = tile * 4
    changed_rows: list[tuple[int, Runs]] = []
    for band, y in enumerate(range(0, height, tile)):
        start, stop = y * stride, min(height, y + tile) * stride
        if previous[start:stop] == current[start:stop]:
            continue
        diff = 0
        for row in range(start, stop, stride):
            old = previous[row:row + stride]
            new = current[row:row + stride]
            if old != new:
                diff |= int.from_bytes(old, "little") ^ int.from_bytes(new, "little")
        changed = diff.to_bytes(stride, "little")
        dirty = [bool(changed[x:x + tile_bytes].strip(b"\0"))
                 for x in range(0, stride, tile_bytes)]
        changed_rows.append((band, _runs(dirty)))
    return _merge(changed_rows, tile, width, height)


def _runs(dirty: list[bool]) -> Runs:
    runs: Runs = []
    start: int | None = None
    for index, is_dirty in enumerate(dirty):
        if is_dirty and start is None:
            start = index
        elif not is_dirty and start is not None:
            runs.append((start, index))
            start = None
    if start is not None:
        runs.append((start, len(dirty)))
    return runs


def _merge(tile_rows: list[tuple[int, Runs]], tile: int, width: int,
           height: int) -> list[Rect]:
    """Runs of dirty tiles per tile row; a run touching an open rectangle from the row
    above joins it (their bounding box), so ragged text lines become one rectangle."""
    rects: list[Rect] = []
    open_boxes: list[tuple[int, int, int]] = []  # (first tile, end tile, first tile row)
    last_row = -1

    def close(box: tuple[int, int, int], end_row: int) -> None:
        x, y = box[0] * tile, box[2] * tile
        rects.append(Rect(x, y, min(box[1] * tile, width) - x, min(end_row * tile, height) - y))

    for r, runs in tile_rows:
        if r != last_row + 1:  # an unchanged tile row between: nothing continues across it
            for box in open_boxes:
                close(box, last_row + 1)
            open_boxes = []
        continued: list[tuple[int, int, int]] = []
        for x0, x1 in runs:
            y0 = r
            for box in [b for b in open_boxes + continued if b[0] < x1 and x0 < b[1]]:
                (open_boxes if box in open_boxes else continued).remove(box)
                x0, x1, y0 = min(x0, box[0]), max(x1, box[1]), min(y0, box[2])
            continued.append((x0, x1, y0))
        for box in open_boxes:
            close(box, r)
        open_boxes = continued
        last_row = r
    for box in open_boxes:
        close(box, last_row + 1)
    return sorted(rects, key=lambda rect: (rect.y, rect.x))


def clip_rects(rects: Iterable[Rect], width: int, height: int) -> list[Rect]:
    """Rectangles a capture source reported, clipped to the frame; empty ones dropped."""
    out = []
    for r in rects:
        x0, y0 = max(0, r.x), max(0, r.y)
        x1, y1 = min(width, r.x + r.width), min(height, r.y + r.height)
        if x1 > x0 and y1 > y0:
            out.append(Rect(x0, y0, x1 - x0, y1 - y0))
    return out

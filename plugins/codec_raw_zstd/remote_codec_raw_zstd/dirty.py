"""Finding what changed between two screen images, as a few rectangles.

Vectorised with numpy: one comparison pass over the frame (as 64-bit words
where the row length allows), a row reduction that settles the unchanged case,
then tile reduction only over the band of rows that changed. Dirty tiles are
merged into horizontal runs, and runs that touch in consecutive tile rows
into their bounding rectangle, so a typed word or a scrolled page is one or a few
rectangles rather than hundreds of tiles.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from remote_core.types import Rect

__all__ = ["TILE", "clip_rects", "find_dirty"]

TILE = 32
"""Tile edge in pixels: small enough to keep typing updates small, large enough to merge."""


def _words(image: npt.NDArray[np.uint8]) -> tuple[npt.NDArray[np.generic], int]:
    """The image as a (height, words) array and the pixels per word."""
    h, w = image.shape[:2]
    flat = image.reshape(h, w * 4)
    if w % 2 == 0:
        return flat.view(np.uint64), 2
    return flat.view(np.uint32), 1


def find_dirty(previous: npt.NDArray[np.uint8], current: npt.NDArray[np.uint8],
               tile: int = TILE) -> list[Rect]:
    """Tile-aligned rectangles (clipped to the frame) covering every changed pixel.

    Both images are C-contiguous ``(height, width, 4)`` uint8 of one shape.
    An empty list means the frames are identical.
    """
    h, w = current.shape[:2]
    old, per_word = _words(previous)
    new, _ = _words(current)
    changed = old != new
    rows = changed.any(axis=1)
    if not rows.any():
        return []
    changed_rows = np.flatnonzero(rows)
    band0, band1 = int(changed_rows[0]) // tile, int(changed_rows[-1]) // tile + 1
    band = changed[band0 * tile:band1 * tile]
    row_starts = np.arange(0, band.shape[0], tile)
    col_starts = np.arange(0, band.shape[1], tile // per_word)
    tiles = np.logical_or.reduceat(np.logical_or.reduceat(band, row_starts, axis=0),
                                   col_starts, axis=1)
    return _merge(tiles, band0, tile, w, h)


def _merge(tiles: npt.NDArray[np.bool_], band0: int, tile: int, width: int,
           height: int) -> list[Rect]:
    """Runs of dirty tiles per tile row; a run touching an open rectangle from the row
    above joins it (their bounding box), so ragged text lines become one rectangle."""
    rects: list[Rect] = []
    open_boxes: list[tuple[int, int, int]] = []  # (first tile, end tile, first tile row)

    def close(box: tuple[int, int, int], end_row: int) -> None:
        x, y = box[0] * tile, box[2] * tile
        rects.append(Rect(x, y, min(box[1] * tile, width) - x, min(end_row * tile, height) - y))

    padded = np.zeros(tiles.shape[1] + 2, np.int8)
    for r, row in enumerate(tiles, start=band0):
        padded[1:-1] = row
        edges = np.flatnonzero(np.diff(padded)).tolist()
        continued: list[tuple[int, int, int]] = []
        for x0, x1 in zip(edges[0::2], edges[1::2], strict=True):
            y0 = r
            for box in [b for b in open_boxes + continued if b[0] < x1 and x0 < b[1]]:
                (open_boxes if box in open_boxes else continued).remove(box)
                x0, x1, y0 = min(x0, box[0]), max(x1, box[1]), min(y0, box[2])
            continued.append((x0, x1, y0))
        for box in open_boxes:
            close(box, r)
        open_boxes = continued
    for box in open_boxes:
        close(box, band0 + tiles.shape[0])
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

"""Rectangle arithmetic for dirty regions: clip, merge, bound. No I/O."""

from __future__ import annotations

from collections.abc import Iterable

from remote_core.types import Rect

__all__ = ["bounding_box", "clip", "merge_rects", "row_runs"]

MAX_RECTS = 24
"""More changed rectangles than this are sent as their bounding box (fewer grabs)."""

ROW_GAP = 16
"""Runs of changed rows fewer than this many unchanged rows apart are one run: a line of
text is one rectangle, not one per row its glyphs touch."""


def clip(rect: Rect, width: int, height: int) -> Rect | None:
    """``rect`` cut to ``width x height`` at the origin; ``None`` when nothing is left."""
    x0, y0 = max(rect.x, 0), max(rect.y, 0)
    x1, y1 = min(rect.x + rect.width, width), min(rect.y + rect.height, height)
    if x1 <= x0 or y1 <= y0:
        return None
    return Rect(x0, y0, x1 - x0, y1 - y0)


def bounding_box(rects: Iterable[Rect]) -> Rect:
    items = list(rects)
    x0 = min(r.x for r in items)
    y0 = min(r.y for r in items)
    x1 = max(r.x + r.width for r in items)
    y1 = max(r.y + r.height for r in items)
    return Rect(x0, y0, x1 - x0, y1 - y0)


def _touch(a: Rect, b: Rect) -> bool:
    return (a.x <= b.x + b.width and b.x <= a.x + a.width
            and a.y <= b.y + b.height and b.y <= a.y + a.height)


def merge_rects(rects: Iterable[Rect], max_rects: int = MAX_RECTS) -> list[Rect]:
    """Merge touching or overlapping rectangles into their bounding boxes.

    The result never overlaps itself, so an incremental frame never carries a
    pixel twice; past ``max_rects`` the whole set becomes one bounding box.
    """
    pending = list(dict.fromkeys(rects))
    merged: list[Rect] = []
    while pending:
        current = pending.pop()
        changed = True
        while changed:
            changed = False
            for other in merged[:]:
                if _touch(current, other):
                    merged.remove(other)
                    current = bounding_box((current, other))
                    changed = True
        merged.append(current)
    if len(merged) > max_rects:
        return [bounding_box(merged)]
    return sorted(merged, key=lambda r: (r.y, r.x))


def row_runs(rows: Iterable[int], gap: int = ROW_GAP) -> list[tuple[int, int]]:
    """``[first, end)`` of each run of the ascending row numbers ``rows``, runs fewer
    than ``gap`` rows apart joined."""
    runs: list[tuple[int, int]] = []
    for row in rows:
        if runs and row - runs[-1][1] < gap:
            runs[-1] = (runs[-1][0], row + 1)
        else:
            runs.append((row, row + 1))
    return runs

"""Rectangles of a BGRA frame held as one flat byte buffer, row by row.

The raw codec works on plain buffers (a capture source's ``memoryview``, a
``bytearray`` of what the viewers have) so that an agent streaming raw frames
needs no numpy: rows are contiguous slices, and a rectangle is its rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from remote_core.codecs import as_image
from remote_core.types import CopyRect, Rect

__all__ = ["Flat", "copy_rect", "flat", "move_rect", "put_rect", "rect_bytes", "rect_rows"]

Flat = bytearray | memoryview
"""A frame as ``width * height * 4`` bytes, rows top to bottom."""


def flat(image: Any) -> tuple[memoryview, int, int]:
    """An image (anything :func:`~remote_core.codecs.as_image` takes) as a flat byte view,
    its width and its height; no copy for a C-contiguous image."""
    view = as_image(image)
    height, width, _ = view.shape or (0, 0, 0)
    return view.cast("B"), width, height


def rect_rows(buffer: Flat, width: int, rect: Rect) -> Iterator[tuple[int, int]]:
    """The ``(start, stop)`` byte ranges of ``rect``'s rows in a frame ``width`` wide."""
    stride = width * 4
    start = (rect.y * width + rect.x) * 4
    length = rect.width * 4
    for offset in range(start, start + rect.height * stride, stride):
        yield offset, offset + length


def rect_bytes(buffer: Flat, width: int, rect: Rect) -> bytes | bytearray | memoryview:
    """``rect``'s pixels, row after row: a view when its rows are contiguous (full width)."""
    if rect.x == 0 and rect.width == width:
        return buffer[rect.y * width * 4:(rect.y + rect.height) * width * 4]
    return b"".join(buffer[a:b] for a, b in rect_rows(buffer, width, rect))


def copy_rect(target: Flat, source: Flat, width: int, rect: Rect) -> None:
    """Copy ``rect`` from ``source`` into ``target``, two frames of one size."""
    if rect.x == 0 and rect.width == width:
        start, stop = rect.y * width * 4, (rect.y + rect.height) * width * 4
        target[start:stop] = source[start:stop]
        return
    for a, b in rect_rows(source, width, rect):
        target[a:b] = source[a:b]


def put_rect(target: Flat, width: int, rect: Rect, pixels: Flat, offset: int = 0) -> int:
    """Write ``rect``'s pixels, read from ``pixels`` at ``offset`` row after row, into the
    frame ``target``; returns the offset after them."""
    length = rect.width * 4
    for a, b in rect_rows(target, width, rect):
        target[a:b] = pixels[offset:offset + length]
        offset += length
    return offset


def move_rect(frame: bytearray, width: int, copy: CopyRect) -> None:
    """Do ``copy`` within ``frame``: its source, as it was before, lands on its target
    (they may overlap)."""
    if copy.src_y == copy.y:  # a move along the rows: each row may overlap itself
        pixels = bytearray(rect_bytes(frame, width, copy.source))
        put_rect(frame, width, copy.target, pixels)
        return
    # Up or down, row by row from the side that is read before it is written.
    stride, length = width * 4, copy.width * 4
    target = (copy.y * width + copy.x) * 4
    source = (copy.src_y * width + copy.src_x) * 4
    rows = range(copy.height) if copy.src_y > copy.y else range(copy.height - 1, -1, -1)
    with memoryview(frame) as view:
        for row in rows:
            a, b = target + row * stride, source + row * stride
            frame[a:a + length] = view[b:b + length]

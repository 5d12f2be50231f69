"""Reading the keyframe flag of a ``VideoFrame`` straight from its wire bytes.

The relay never parses video: a protobuf parse of a 1 MB frame copies the
megabyte. Only a viewer that is skipping to the next keyframe needs to know
whether a frame is one, and this walk of the field tags answers that by
skipping over the pixel data without touching it.
"""

from __future__ import annotations

from ._wire import _varint

__all__ = ["is_keyframe"]

# VideoFrame.encoding field number -> the keyframe flag's field number inside it.
_FLAG_FIELD = {10: 6, 11: 2, 12: 2, 13: 2}  # raw: RawFrame.is_keyframe; others: EncodedFrame


def _skip(data: bytes, pos: int, wire_type: int) -> int:
    if wire_type == 0:
        return _varint(data, pos)[1]
    if wire_type == 1:
        return pos + 8
    if wire_type == 2:
        length, pos = _varint(data, pos)
        return pos + length
    if wire_type == 5:
        return pos + 4
    raise ValueError(f"unsupported wire type {wire_type}")


def _flag(data: bytes, pos: int, end: int, field: int) -> bool:
    """The last value of varint ``field`` in ``data[pos:end]`` (protobuf: last one wins)."""
    value = False
    while pos < end:
        tag, pos = _varint(data, pos)
        if tag >> 3 == field and tag & 7 == 0:
            number, pos = _varint(data, pos)
            value = number != 0
        else:
            pos = _skip(data, pos, tag & 7)
    return value


def is_keyframe(data: bytes, offset: int) -> bool:
    """Whether the ``VideoFrame`` encoded in ``data[offset:]`` is self-contained.

    Malformed bytes answer ``False``: such a frame never ends a skip.
    """
    try:
        pos, end, found = offset, len(data), False
        while pos < end:
            tag, pos = _varint(data, pos)
            number, wire_type = tag >> 3, tag & 7
            if number in _FLAG_FIELD and wire_type == 2:
                length, pos = _varint(data, pos)
                if pos + length > end:
                    return False
                found = _flag(data, pos, pos + length, _FLAG_FIELD[number])
                pos += length
            else:
                pos = _skip(data, pos, wire_type)
        return found and pos == end
    except (IndexError, ValueError):
        return False

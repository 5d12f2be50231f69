"""Reading a ``VideoFrame``'s keyframe flag and codec straight from its wire bytes.

The relay never parses video: a protobuf parse of a 1 MB frame copies the
megabyte. Only a viewer that is skipping to the next keyframe needs to know
whether a frame is one, and only a viewer that lists the codecs it decodes
needs to know a frame's codec; this walk of the field tags answers both by
skipping over the picture without touching it. The slots, their keyframe
flags and the plugin frame's codec name are read from the generated
descriptor, so a slot added to the proto needs no change here.
"""

from __future__ import annotations

from ._wire import _varint, pb

__all__ = ["SLOT_NAMES", "codec_of", "is_keyframe"]

_ENCODING = pb.VideoFrame.DESCRIPTOR.oneofs_by_name["encoding"]
SLOT_NAMES: dict[int, str] = {field.number: field.name for field in _ENCODING.fields}
"""``VideoFrame.encoding`` field number -> slot name, from the generated descriptor."""


def _field_number(slot: str, *names: str) -> int | None:
    fields = pb.VideoFrame.DESCRIPTOR.fields_by_name[slot].message_type.fields_by_name
    return next((fields[name].number for name in names if name in fields), None)


# Slot field number -> the keyframe flag's field number inside it (RawFrame.is_keyframe,
# EncodedFrame.keyframe, PluginFrame.keyframe ...), and -> the codec name's, for the
# slots whose message names its codec (PluginFrame.codec).
_FLAG_FIELD = {number: _field_number(slot, "keyframe", "is_keyframe")
               for number, slot in SLOT_NAMES.items()}
_NAME_FIELD = {number: field for number, slot in SLOT_NAMES.items()
               if (field := _field_number(slot, "codec")) is not None}


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


def _encoding(data: bytes, offset: int) -> tuple[int, int, int] | None:
    """The slot of the ``VideoFrame`` in ``data[offset:]`` and where its message lies,
    ``(number, start, end)``; ``None`` when there is none or the bytes are malformed."""
    try:
        pos, end, found = offset, len(data), None
        while pos < end:
            tag, pos = _varint(data, pos)
            number, wire_type = tag >> 3, tag & 7
            if number in SLOT_NAMES and wire_type == 2:
                length, pos = _varint(data, pos)
                if pos + length > end:
                    return None
                found = (number, pos, pos + length)  # protobuf: the last one wins
                pos += length
            else:
                pos = _skip(data, pos, wire_type)
        return found if pos == end else None
    except (IndexError, ValueError):
        return None


def is_keyframe(data: bytes, offset: int) -> bool:
    """Whether the ``VideoFrame`` encoded in ``data[offset:]`` is self-contained.

    Malformed bytes answer ``False``: such a frame never ends a skip.
    """
    found = _encoding(data, offset)
    if found is None:
        return False
    number, start, end = found
    flag = _FLAG_FIELD[number]
    try:
        return flag is not None and _flag(data, start, end, flag)
    except (IndexError, ValueError):
        return False


def codec_of(data: bytes, offset: int) -> str | None:
    """The wire name of the codec of the ``VideoFrame`` in ``data[offset:]``: its slot
    (``raw``, ``h264`` ...), or for a plugin frame the codec it names; ``None`` when the
    bytes are malformed. Only the tags are read, never the picture."""
    found = _encoding(data, offset)
    if found is None:
        return None
    number, start, end = found
    field = _NAME_FIELD.get(number)
    if field is None:
        return SLOT_NAMES[number]
    try:
        name = b""
        pos = start
        while pos < end:
            tag, pos = _varint(data, pos)
            if tag >> 3 == field and tag & 7 == 2:
                length, pos = _varint(data, pos)
                name, pos = data[pos:pos + length], pos + length
            else:
                pos = _skip(data, pos, tag & 7)
        return (name.decode("utf-8") or None) if pos == end else None
    except (IndexError, ValueError):  # UnicodeDecodeError is a ValueError
        return None

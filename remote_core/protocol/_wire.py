"""The only module that imports the generated protobuf code.

Also holds the cheap framing peek the relay uses on its hot path: a
``Message`` with exactly one payload field is one tag, one length and the
payload, so the field number can be read without parsing the payload.
"""

from __future__ import annotations

from google.protobuf.message import DecodeError, Message

from .._proto import remote_support_pb2 as pb

__all__ = ["FIELD_BY_NUMBER", "NUMBER_BY_FIELD", "DecodeError", "pb", "peek", "wrap"]

_ONEOF = pb.Message.DESCRIPTOR.oneofs_by_name["payload"]
FIELD_BY_NUMBER: dict[int, str] = {f.number: f.name for f in _ONEOF.fields}
NUMBER_BY_FIELD: dict[str, int] = {name: num for num, name in FIELD_BY_NUMBER.items()}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """Decode a varint at ``pos``; return (value, next position). Raise IndexError/ValueError."""
    result = 0
    shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift >= 64:
            raise ValueError("varint too long")


def peek(data: bytes) -> tuple[int, int] | None:
    """If ``data`` is exactly one length-delimited field, return (field number, payload offset).

    ``None`` means the framing is not that simple and a full parse must decide.
    """
    try:
        tag, pos = _varint(data, 0)
        if tag & 7 != 2:
            return None
        length, pos = _varint(data, pos)
    except (IndexError, ValueError):
        return None
    if pos + length != len(data):
        return None
    return tag >> 3, pos


def wrap(kind: str, payload: Message) -> bytes:
    """Serialize ``payload`` as the ``kind`` field of a ``Message``."""
    message = pb.Message()
    getattr(message, kind).CopyFrom(payload)
    return message.SerializeToString()

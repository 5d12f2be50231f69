"""Events the sans-I/O layer hands to its caller. Frozen, with no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from google.protobuf.message import Message

from ._wire import DecodeError, pb
from .errors import RemoteProtocolError

__all__ = ["Dropped", "Inbound", "ProtocolEvent"]

M = TypeVar("M", bound=Message)


_PAYLOADS: dict[str, type[Message]] = {
    field.name: field.message_type._concrete_class
    for field in pb.Message.DESCRIPTOR.fields if field.message_type is not None}
"""Each ``Message`` field's payload class, by kind: looked up once, not per message."""


@dataclass(frozen=True, slots=True)
class Inbound:
    """A well-framed message from the peer, allowed for its role in the current state.

    ``data`` is the whole canonical ``Message`` encoding, ready to forward as it is.
    The payload is parsed only when :meth:`payload` is called.
    """

    kind: str
    number: int
    data: bytes
    offset: int

    def payload(self) -> Any:
        """Parse and return the payload message (``SessionRequest`` ...).

        :raises RemoteProtocolError: (1007) if the payload bytes are not valid protobuf.
        """
        message = _PAYLOADS[self.kind]()
        try:
            message.ParseFromString(self.data[self.offset:])
        except DecodeError as exc:
            raise RemoteProtocolError(f"{self.kind} payload does not parse: {exc}", 1007) from None
        return message

    def parse(self, cls: type[M]) -> M:
        """:meth:`payload`, typed: the payload as ``cls`` (``pb.VideoFrame`` ...).

        :raises TypeError: ``kind`` carries another message type (a caller's mistake).
        :raises RemoteProtocolError: (1007) the payload bytes are not valid protobuf.
        """
        message = self.payload()
        if not isinstance(message, cls):
            raise TypeError(f"{self.kind} carries {type(message).__name__}, not {cls.__name__}")
        return message


@dataclass(frozen=True, slots=True)
class Dropped:
    """A well-formed message this peer may not send now; count it and log it, never relay it."""

    kind: str
    reason: str


ProtocolEvent = Inbound | Dropped

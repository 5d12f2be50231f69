"""How a viewer's WebSocket travels over the bus between two nodes (sans-I/O).

A tunnel carries the socket's messages both ways as bus messages of one byte
of type and a body: whole messages, chunks of messages larger than the bus
takes in one piece, text frames (which the relay refuses, as on a socket),
the close frame, and credit (the bytes the viewer's node has written to the
socket, so the agent's node sends no more than a window ahead: a slow viewer
fills its own outbox there, whose policy drops video to the next keyframe,
and never the bus).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = ["Close", "Credit", "Reassembler", "close", "credit", "data", "text"]

DATA, MORE, TEXT, CLOSE, CREDIT = range(5)


@dataclass(frozen=True, slots=True)
class Close:
    code: int
    reason: str


@dataclass(frozen=True, slots=True)
class Credit:
    size: int


def data(payload: bytes, chunk: int) -> list[bytes]:
    """``payload`` as bus messages of at most ``chunk`` bytes of body each."""
    if len(payload) <= chunk:
        return [bytes([DATA]) + payload]
    parts = [payload[i:i + chunk] for i in range(0, len(payload), chunk)]
    return [bytes([MORE]) + p for p in parts[:-1]] + [bytes([DATA]) + parts[-1]]


def text(payload: str) -> bytes:
    return bytes([TEXT]) + payload.encode("utf-8", "replace")


def close(code: int, reason: str) -> bytes:
    return bytes([CLOSE]) + struct.pack("!H", code) + reason.encode("utf-8")[:120]


def credit(size: int) -> bytes:
    return bytes([CREDIT]) + struct.pack("!Q", size)


class Reassembler:
    """Bus messages in, the socket's messages out: ``bytes``, ``str``, :class:`Close`,
    :class:`Credit`, or ``None`` while a chunked message is incomplete.

    :param limit: the largest message accepted (the server's ``max_message_bytes``).
    """

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._parts: list[bytes] = []
        self._size = 0

    def feed(self, message: bytes) -> bytes | str | Close | Credit | None:
        if not message:
            raise ValueError("empty tunnel message")
        kind, body = message[0], message[1:]
        if kind in (DATA, MORE):
            self._size += len(body)
            if self._size > self._limit:
                raise ValueError(f"tunnel message over {self._limit} bytes")
            self._parts.append(body)
            if kind == MORE:
                return None
            whole = b"".join(self._parts)
            self._parts, self._size = [], 0
            return whole
        if kind == TEXT:
            return body.decode("utf-8", "replace")
        if kind == CLOSE and len(body) >= 2:
            return Close(struct.unpack("!H", body[:2])[0], body[2:].decode("utf-8", "replace"))
        if kind == CREDIT and len(body) == 8:
            return Credit(struct.unpack("!Q", body)[0])
        raise ValueError(f"unknown tunnel message type {kind}")

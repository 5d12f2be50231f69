"""Whole WebSocket frames out of a byte stream, sans-IO (RFC 6455 section 5.2).

A node forwarding a viewer passes the session node's frames on as the bytes they
are, without taking them apart into messages; but only whole ones, so a frame the
forwarding node writes itself (a pong, a close) never lands inside one, and a node
lost in the middle of a frame leaves the viewer at a frame's edge.
"""

from __future__ import annotations

__all__ = ["FrameTooLarge", "WholeFrames"]

CLOSE = 0x8
MAX_HEADER = 14  # two bytes, an eight-byte length, a four-byte mask key


class FrameTooLarge(ValueError):
    """A frame longer than the limit: the stream is not one to hold on to."""


def frame_size(data: bytes, at: int) -> int | None:
    """The length, header and payload, of the frame starting at ``data[at]``; None while
    its header is not all there."""
    have = len(data) - at
    if have < 2:
        return None
    second = data[at + 1]
    length, header = second & 0x7F, 2
    if length == 126:
        if have < 4:
            return None
        length, header = int.from_bytes(data[at + 2:at + 4], "big"), 4
    elif length == 127:
        if have < 10:
            return None
        length, header = int.from_bytes(data[at + 2:at + 10], "big"), 10
    if second & 0x80:  # a mask key (a client's frame)
        header += 4
    return header + length


class WholeFrames:
    """Cuts a stream of unmasked (server) frames at frame edges, up to its close frame.

    :param limit: the longest payload held, in bytes: a frame longer than that and the
        longest header raises :class:`FrameTooLarge`.
    """

    def __init__(self, limit: int) -> None:
        self._limit = limit + MAX_HEADER
        self._held: list[bytes] = []  # the start of a frame still arriving
        self._held_bytes = 0
        self._need = 0  # that frame's whole length, once its header is in (else 0)
        self.close: tuple[int, str] | None = None
        """The close frame's code and reason, once it came (1005: it named no code)."""

    def feed(self, data: bytes) -> bytes | memoryview:
        """The whole frames that ``data`` completes, before the close frame if it came;
        nothing once it has."""
        if self.close is not None:
            return b""
        if self._held:
            self._held.append(data)
            self._held_bytes += len(data)
            if not self._need:  # the header was cut: what is held is a few bytes
                self._need = self._checked(frame_size(b"".join(self._held), 0))
            if not self._need or self._held_bytes < self._need:
                return b""
            data = b"".join(self._held)
            self._held, self._held_bytes, self._need = [], 0, 0
        end = 0
        while end < len(data):
            size = self._checked(frame_size(data, end))
            if not size or end + size > len(data):
                break
            if data[end] & 0x0F == CLOSE:
                self.close = _close_of(data[end:end + size])
                return memoryview(data)[:end]
            end += size
        if end == len(data):
            return data
        rest = data[end:]
        self._held, self._held_bytes = [rest], len(rest)
        self._need = self._checked(frame_size(rest, 0))
        return memoryview(data)[:end]

    def _checked(self, size: int | None) -> int:
        if size is not None and size > self._limit:
            raise FrameTooLarge(f"a frame of {size} bytes (at most {self._limit})")
        return size or 0


def _close_of(frame: bytes) -> tuple[int, str]:
    length = frame[1] & 0x7F  # a control frame's payload: at most 125 bytes, unmasked
    payload = frame[len(frame) - length:]
    if length < 2:
        return 1005, ""
    return int.from_bytes(payload[:2], "big"), payload[2:].decode("utf-8", "replace")

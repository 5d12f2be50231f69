"""Per-connection protocol state, with no sockets: bytes in, events out; events in, bytes out.

One :class:`Connection` per WebSocket. It knows who is on each side, which
messages each side may send (derived from the one route table, ``routes.py``),
and the state of the connection (awaiting ``session_request``, authenticated,
closed).
"""

from __future__ import annotations

import enum
from collections import Counter
from typing import Any

from google.protobuf.message import Message

from ._wire import FIELD_BY_NUMBER, NUMBER_BY_FIELD, DecodeError, pb, peek, wrap
from .errors import CloseCode, LocalProtocolError, RemoteProtocolError
from .events import _PAYLOADS, Dropped, Inbound, ProtocolEvent
from .routes import ALLOWED, CHANNEL_KINDS, INPUT_KINDS, ROUTES, Channel, Role

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "Connection", "State"]

DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
MAX_CLIPBOARD_BYTES = 1024 * 1024
"""Clipboard text shared in one ``ClipboardData``; more is refused with a message by its
sender (the console's viewer, the agent), far below the socket's message limit."""


class State(enum.Enum):
    AWAITING_REQUEST = "awaiting_request"
    AUTHENTICATED = "authenticated"
    CLOSED = "closed"


_FIRST = {Role.SERVER: "session_response"}
_VIDEO_FRAME = NUMBER_BY_FIELD["video_frame"]
_IDLE_KINDS = {NUMBER_BY_FIELD[kind]: kind for kind in ("heartbeat", "agent_status")}
_EITHER_CHANNEL = frozenset({"heartbeat", "disconnect"})
_ANY_CHANNEL = frozenset().union(*CHANNEL_KINDS.values())
_SESSION_TYPE = {Channel.TERMINAL: "BACKSTAGE", Channel.FILES: "FILE_TRANSFER"}


def _channel_of(kind: str) -> Channel:
    return next(channel for channel, kinds in CHANNEL_KINDS.items() if kind in kinds)


class Connection:
    """One end of a connection.

    :param local: who we are; :param peer: who is on the other end. The server
        talks to an AGENT or a VIEWER; agents and viewers talk to the SERVER.
    """

    def __init__(self, local: Role, peer: Role,
                 max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        if (peer, local) not in ALLOWED or (local, peer) not in ALLOWED:
            raise ValueError(f"no protocol between {local.value} and {peer.value}")
        self.local = local
        self.peer = peer
        self.max_message_bytes = max_message_bytes
        self.state = State.AWAITING_REQUEST
        self.view_only = False
        self.channel: Channel | None = None
        """A viewer's own channel (BACKSTAGE, FILE_TRANSFER): it sends that channel's
        messages only (a screen viewer none of any channel's)."""
        self.dropped: Counter[str] = Counter()
        self._inbound = ALLOWED[(peer, local)]
        self._outbound = ALLOWED[(local, peer)]
        self._first_in = _FIRST.get(peer, "session_request")
        self._video = ROUTES.get((peer, "video_frame"))
        self._first_out = _FIRST.get(local, "session_request")

    # -- receiving ---------------------------------------------------------
    def receive_data(self, data: bytes | str) -> ProtocolEvent:
        """Interpret one WebSocket message from the peer.

        :returns: :class:`Inbound` to act on, or :class:`Dropped` to count and log.
        :raises RemoteProtocolError: the socket must close with ``close_code``.
        """
        if self.state is State.CLOSED:
            raise LocalProtocolError("connection is closed", CloseCode.NORMAL)
        if isinstance(data, str):
            raise self._fail("text messages are not allowed; send binary protobuf",
                             CloseCode.UNSUPPORTED_DATA)
        if len(data) > self.max_message_bytes:
            raise self._fail(f"message of {len(data)} bytes exceeds the limit of "
                             f"{self.max_message_bytes}", CloseCode.TOO_BIG)
        event = self._frame(bytes(data))
        if self.state is State.AWAITING_REQUEST:
            if not isinstance(event, Inbound) or event.kind != self._first_in:
                raise self._fail(f"the first message must be {self._first_in}, "
                                 f"got {event.kind}", CloseCode.POLICY_VIOLATION)
            return event
        if isinstance(event, Dropped):
            return self._drop(event.kind, event.reason)
        if event.kind not in self._inbound:
            return self._drop(event.kind, f"the {self.peer.value} may not send {event.kind}")
        if event.kind == self._first_in:
            return self._drop(event.kind, "already authenticated")
        if self.view_only and event.kind in INPUT_KINDS:
            return self._drop(event.kind, "view-only session")
        if self.peer is Role.VIEWER and event.kind not in _EITHER_CHANNEL:
            if self.channel is not None and event.kind not in CHANNEL_KINDS[self.channel]:
                return self._drop(event.kind, f"a {_SESSION_TYPE[self.channel]} session sends "
                                              "its own messages only")
            if self.channel is None and event.kind in _ANY_CHANNEL:
                return self._drop(event.kind, f"{event.kind} needs a "
                                              f"{_SESSION_TYPE[_channel_of(event.kind)]} session")
        return event

    def video_offset(self, data: bytes) -> int | None:
        """The relay's fast path: where the ``VideoFrame`` starts in ``data`` when it is a
        well-framed video frame this connection takes now, else None (take the full path).

        Exactly what :meth:`receive_data` would accept as ``video_frame`` in this state,
        answered with one peek at the outer tag and no parse: a frame is megabytes.
        """
        if (self._video is None or self.state is not State.AUTHENTICATED
                or len(data) > self.max_message_bytes):
            return None
        peeked = peek(data)
        if peeked is None or peeked[0] != _VIDEO_FRAME:
            return None
        return peeked[1]

    def idle_message(self, data: bytes) -> tuple[str, Any] | None:
        """The other fast path: the kind and payload in ``data`` when it is a well-formed
        ``heartbeat`` or ``agent_status`` this connection takes now, else None (take the
        full path).

        Exactly what :meth:`receive_data` would accept as either, with nothing counted or
        changed: what an idle fleet says (667 heartbeats and 167 status reports a second
        from 10,000 agents), answered where it is read.
        """
        if self.state is not State.AUTHENTICATED or len(data) > self.max_message_bytes:
            return None
        peeked = peek(data)
        if peeked is None:
            return None
        number, offset = peeked
        kind = _IDLE_KINDS.get(number)
        if kind is None or kind not in self._inbound:
            return None
        message = _PAYLOADS[kind]()
        try:
            message.ParseFromString(data[offset:])
        except DecodeError:
            return None  # the full path refuses it, with its close code
        return kind, message

    def _frame(self, data: bytes) -> ProtocolEvent:
        peeked = peek(data)
        if peeked is not None and peeked[0] in FIELD_BY_NUMBER:
            number, offset = peeked
            return Inbound(FIELD_BY_NUMBER[number], number, data, offset)
        message = pb.Message()
        try:
            message.ParseFromString(data)
        except DecodeError as exc:
            raise self._fail(f"bytes do not parse as Message: {exc}",
                             CloseCode.INVALID_PAYLOAD) from None
        kind = message.WhichOneof("payload")
        if kind is None:
            return Dropped("unknown", "no known payload field")
        canonical = wrap(kind, getattr(message, kind))
        number, offset = peek(canonical) or (0, 0)
        return Inbound(kind, number, canonical, offset)

    def _drop(self, kind: str, reason: str) -> Dropped:
        self.dropped[kind] += 1
        return Dropped(kind, reason)

    def _fail(self, reason: str, code: int) -> RemoteProtocolError:
        self.state = State.CLOSED
        return RemoteProtocolError(reason, code)

    # -- sending -----------------------------------------------------------------
    def send(self, kind: str, payload: Message) -> bytes:
        """Serialize ``payload`` as ``kind``; refuse what this side may not send now."""
        if self.state is State.CLOSED:
            raise LocalProtocolError(f"cannot send {kind}: connection is closed")
        if self.state is State.AWAITING_REQUEST and kind not in {self._first_out, "disconnect"}:
            raise LocalProtocolError(f"cannot send {kind} before {self._first_out}")
        if kind not in self._outbound:
            raise LocalProtocolError(f"the {self.local.value} may not send {kind} "
                                     f"to the {self.peer.value}")
        return wrap(kind, payload)

    def accept(self, session_id: str, display_info: pb.DisplayInfo | None = None, *,
               view_only: bool = False, channel: Channel | None = None) -> bytes:
        """Server side: answer the request with success and become authenticated; a
        ``channel`` viewer's session (a terminal, files) carries that channel's messages only."""
        response = pb.SessionResponse(success=True, session_id=session_id)
        if display_info is not None:
            response.display_info.CopyFrom(display_info)
        data = self.send("session_response", response)
        self.state = State.AUTHENTICATED
        self.view_only = view_only
        self.channel = channel
        return data

    def reject(self, error: str) -> bytes:
        """Server side: answer with ``success=false`` and ``error``; close 1008 afterwards."""
        data = self.send("session_response", pb.SessionResponse(success=False, error=error))
        self.state = State.CLOSED
        return data

    def authenticated(self) -> None:
        """Client side: the server accepted our request."""
        if self.state is not State.AWAITING_REQUEST:
            raise LocalProtocolError(f"cannot authenticate in state {self.state.value}")
        self.state = State.AUTHENTICATED

    def close(self) -> None:
        self.state = State.CLOSED

"""uvicorn's WebSocket protocol, able to answer some messages where it reads them.

Each message an ASGI app receives costs a queue put, a task woken, a pause and a
resume of reading, and its reply the same again on the way out. An agent's traffic is
nearly all video frames, and an idle fleet's heartbeats and status reports; the relay
passes the frames on to the viewers' outboxes, answers the heartbeats (and takes the
reports that say nothing new) through :class:`InlineAnswers`, which this
protocol puts in the socket's ASGI scope (``scope["extensions"]``): a reply it gives is
written at once, and the message never reaches the app. The app offers an answer only
while it waits for the next message, and nothing is answered while messages wait in the
queue, so a reply never overtakes what the peer said before. Everything else takes
uvicorn's path unchanged.

The other way, a message the relay queues for a socket whose writer waits on an empty
outbox is written at once (:meth:`RelayWebSocketProtocol.send_now`), the writer not
woken, while the socket's send buffer has room.

A cluster node forwarding a viewer to the node holding its session passes that node's
frames to the socket as they are (:mod:`remote_server.cluster.forward`); the protocol
itself is in the scope for that (``RAW_SOCKET``), with what the forwarding needs of it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.protocol import State

from ..relay.peer import InlineAnswer

__all__ = ["INLINE_ANSWERS", "RAW_SOCKET", "InlineAnswers", "RelayWebSocketProtocol"]

INLINE_ANSWERS = "remote_support.inline_answers"
"""The scope extension naming a socket's :class:`InlineAnswers`."""

RAW_SOCKET = "remote_support.raw_socket"
"""The scope extension naming the socket's :class:`RelayWebSocketProtocol` (a
``remote_server.cluster.forward.ViewerEnd``)."""


class InlineAnswers:
    """What the app wants answered on one socket; it sets :attr:`answer`, or None."""

    __slots__ = ("answer",)

    def __init__(self) -> None:
        self.answer: InlineAnswer | None = None


class RelayWebSocketProtocol(WebSocketsSansIOProtocol):
    """``websockets-sansio``, the shipped implementation, with :class:`InlineAnswers`."""

    inline: InlineAnswers | None = None
    on_writable: Callable[[bool], None] | None = None
    """Told when the socket's send buffer fills (False) and drains again (True)."""

    def handle_connect(self, event: Any) -> None:
        super().handle_connect(event)
        scope = getattr(self, "scope", None)
        if scope is not None:  # an upgrade accepted (a refused one has no scope)
            self.inline = InlineAnswers()
            scope["extensions"][INLINE_ANSWERS] = self.inline
            scope["extensions"][RAW_SOCKET] = self

    def closing(self) -> bool:
        """A close frame went out, or the socket is going: no frame may follow."""
        return (self.close_sent or self.conn.close_sent is not None
                or self.transport.is_closing())

    def resume_reading(self) -> None:
        """Read again, unless a message waits for the app (uvicorn reads one at a time)."""
        if not self.read_paused:
            self.transport.resume_reading()

    def pause_writing(self) -> None:
        super().pause_writing()
        if self.on_writable is not None:
            self.on_writable(False)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self.on_writable is not None:
            self.on_writable(True)

    def send_now(self, data: bytes) -> bool:
        """Write a binary message at once, as the app's ``websocket.send`` would, if it can
        go now: the handshake done, the socket open and its send buffer not full."""
        if (not self.handshake_complete or self.disconnected or self.closing()
                or self.conn.state is not State.OPEN or not self.writable.is_set()):
            return False
        self._write_binary(data)
        return True

    def _write_binary(self, data: bytes) -> None:
        self.conn.send_binary(data)
        self.transport.write(b"".join(self.conn.data_to_send()))

    def handle_bytes(self, event: Any) -> None:
        inline = self.inline
        if (inline is not None and inline.answer is not None and event.fin
                and self.queue.empty() and not self.close_sent
                and not self.transport.is_closing()):
            reply = inline.answer(bytes(event.data))
            if reply:
                self._write_binary(reply)
            if reply is not None:
                return
        super().handle_bytes(event)

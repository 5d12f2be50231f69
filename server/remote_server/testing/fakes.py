"""A WebSocket in memory, so the relay's drivers run with no server and no network.

:func:`~remote_server.relay.peer.serve_agent` and ``serve_viewer`` take any
:class:`~remote_server.relay.peer.Transport`; :class:`FakeTransport` is one
whose other end is the test, as httpx's ``MockTransport`` is for a client.
:class:`FakePeer` speaks the protocol over it (a client-side ``Connection``),
so a test reads kinds and payloads, not bytes.
"""

from __future__ import annotations

import math
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from remote_core.protocol import Connection, Dropped, Inbound, Role, pb, wrap

from ..relay.peer import InlineAnswer

__all__ = ["FakePeer", "FakeTransport"]


class FakeTransport:
    """One accepted WebSocket: the server's side of it, and the test's hands on the other."""

    def __init__(self) -> None:
        self._in: tuple[MemoryObjectSendStream[bytes | str | None],
                        MemoryObjectReceiveStream[bytes | str | None]] = (
            anyio.create_memory_object_stream(math.inf))
        self._out: tuple[MemoryObjectSendStream[bytes], MemoryObjectReceiveStream[bytes]] = (
            anyio.create_memory_object_stream(math.inf))
        self.closed: tuple[int, str] | None = None
        """The close code and reason the server sent, once it has."""
        self._answer: InlineAnswer | None = None
        self._waiting = False

    # -- the server's side (the Transport protocol) ------------------------------------
    async def receive(self) -> bytes | str | None:
        self._waiting = True
        try:
            return await self._in[1].receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return None
        finally:
            self._waiting = False

    async def send(self, data: bytes) -> None:
        if self.closed is not None:
            raise ConnectionError("the socket is closed")
        await self._out[0].send(data)

    async def close(self, code: int, reason: str) -> None:
        if self.closed is None:
            self.closed = (code, reason)
        self._out[0].close()
        self._in[0].close()

    def answer_inline(self, answer: InlineAnswer | None) -> None:
        self._answer = answer

    def send_now(self, data: bytes) -> bool:
        return False  # everything through send(), which the test side reads in order

    # -- the test's side -----------------------------------------------------------------
    def put(self, data: bytes | str) -> None:
        """What the peer sends the server; what the server answers inline is answered at
        once, as the real socket does (while the server waits for the next message)."""
        if (self._answer is not None and self._waiting and isinstance(data, bytes)
                and self.closed is None and not self._in[1].statistics().current_buffer_used):
            reply = self._answer(data)
            if reply is not None:
                self._out[0].send_nowait(reply)
                return
        self._in[0].send_nowait(data)

    def hang_up(self) -> None:
        """The peer goes away (the server's next receive answers None)."""
        self._in[0].send_nowait(None)

    async def take(self, wait: float = 5.0) -> bytes | None:
        """The next message the server sent, or None once it closed the socket."""
        with anyio.fail_after(wait):
            try:
                return await self._out[1].receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                return None


class FakePeer:
    """An agent or a viewer on a :class:`FakeTransport`, speaking the protocol."""

    def __init__(self, role: Role) -> None:
        self.transport = FakeTransport()
        self.conn = Connection(role, Role.SERVER)
        self.passed: list[str] = []
        """Kinds :meth:`expect` read past while waiting for another."""

    def send(self, kind: str, payload: Any) -> None:
        self.transport.put(self.conn.send(kind, payload))

    def request(self, token: str, **fields: Any) -> None:
        """The first message: a ``SessionRequest`` presenting ``token``."""
        self.send("session_request", pb.SessionRequest(session_token=token, **fields))

    def send_raw(self, kind: str, payload: Any) -> None:
        """``payload`` as ``kind`` whether or not this side may send it (an attacker's)."""
        self.transport.put(wrap(kind, payload))

    async def expect(self, kind: str, wait: float = 5.0) -> Any:
        """Read until a ``kind`` arrives; return its payload. Fails on a close or after
        ``wait`` seconds."""
        with anyio.fail_after(wait):
            while True:
                data = await self.transport.take(wait)
                if data is None:
                    raise AssertionError(f"closed {self.transport.closed} while expecting {kind}")
                event = self.conn.receive_data(data)
                if isinstance(event, Dropped):
                    continue
                assert isinstance(event, Inbound)
                if event.kind == "session_response" and event.payload().success:
                    self.conn.authenticated()
                if event.kind == kind:
                    return event.payload()
                self.passed.append(event.kind)

    async def closed(self, wait: float = 5.0) -> tuple[int, str]:
        """Read until the server closes the socket; return its code and reason."""
        with anyio.fail_after(wait):
            while await self.transport.take(wait) is not None:
                pass
        assert self.transport.closed is not None
        return self.transport.closed

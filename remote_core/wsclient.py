"""A small WebSocket client: wsproto for the protocol, anyio streams for the bytes.

wsproto owns framing, masking, pings and the closing handshake; this module
only moves bytes between it and a TCP (or TLS) stream, so the agent and the
Python viewer share one transport with no protocol logic of its own.
"""

from __future__ import annotations

import contextlib
import ssl
from collections import deque
from collections.abc import Iterable
from types import TracebackType
from urllib.parse import urlsplit

import anyio
import anyio.abc
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Event,
    Ping,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)
from wsproto.utilities import LocalProtocolError

from .errors import RemoteSupportError

__all__ = ["ConnectionClosed", "HandshakeError", "WebSocketClient", "connect", "ws_url"]

_READ_SIZE = 256 * 1024


class ConnectionClosed(RemoteSupportError):
    """The WebSocket is closed; ``code`` and ``reason`` are what the peer (or we) said."""

    def __init__(self, code: int, reason: str = "") -> None:
        super().__init__(f"WebSocket closed with {code}{': ' + reason if reason else ''}")
        self.code = code
        self.reason = reason


class HandshakeError(RemoteSupportError):
    """The server refused the upgrade; ``status`` is its HTTP status."""

    def __init__(self, status: int, body: bytes = b"") -> None:
        super().__init__(f"WebSocket upgrade refused with HTTP {status}")
        self.status = status
        self.body = body


def ws_url(base_url: str, path: str) -> str:
    """``http(s)://host:port`` plus ``path`` as a ``ws(s)://`` URL (CONTRACT 5)."""
    parts = urlsplit(base_url)
    scheme = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}.get(parts.scheme)
    if scheme is None or not parts.hostname:
        raise ValueError(f"server URL must be http(s)://host[:port], got {base_url!r}")
    return f"{scheme}://{parts.netloc}{parts.path.rstrip('/')}{path}"


class WebSocketClient:
    """One client WebSocket. Any number of tasks may send; one task receives."""

    def __init__(self, stream: anyio.abc.ByteStream, ws: WSConnection) -> None:
        self._stream = stream
        self._ws = ws
        self._events: deque[Event] = deque()
        self._message: list[bytes | bytearray | str] = []
        self._send_lock = anyio.Lock()
        self.closed: ConnectionClosed | None = None

    async def _write(self, data: bytes) -> None:
        if data:
            async with self._send_lock:
                await self._stream.send(data)

    async def send(self, data: bytes) -> None:
        """Send one binary message."""
        if self.closed is not None:
            raise self.closed
        try:
            frame = self._ws.send(BytesMessage(data=data))
        except LocalProtocolError:
            # The peer's close frame is in, not yet met by the reader (which will report
            # its code): to a sender the connection is closed all the same.
            raise ConnectionClosed(1006, "the peer is closing the connection") from None
        try:
            await self._write(frame)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise self._lost() from exc

    async def receive(self) -> bytes | str:
        """The next whole message; raises :class:`ConnectionClosed` at the end."""
        while True:
            while self._events:
                event = self._events.popleft()
                if isinstance(event, BytesMessage | TextMessage):
                    self._message.append(event.data)
                    if event.message_finished:
                        parts, self._message = self._message, []
                        if isinstance(parts[0], str):
                            return "".join(str(p) for p in parts)
                        return b"".join(p for p in parts if not isinstance(p, str))
                elif isinstance(event, Ping):
                    await self._write(self._ws.send(event.response()))
                elif isinstance(event, CloseConnection):
                    self.closed = ConnectionClosed(event.code, event.reason or "")
                    with contextlib.suppress(Exception):  # the peer need not wait for our half
                        await self._write(self._ws.send(event.response()))
                    await self._stream.aclose()
                    raise self.closed
            if self.closed is not None:
                raise self.closed
            try:
                data = await self._stream.receive(_READ_SIZE)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError,
                    OSError):
                raise self._lost() from None
            self._ws.receive_data(data)
            self._events.extend(self._ws.events())

    def _lost(self) -> ConnectionClosed:
        self.closed = self.closed or ConnectionClosed(1006, "connection lost")
        return self.closed

    async def close(self, code: int = 1000, reason: str = "") -> None:
        """Start the closing handshake, wait briefly for the peer's answer, drop the socket."""
        if self.closed is None:
            self.closed = ConnectionClosed(code, reason)
            with contextlib.suppress(Exception):  # a broken socket: nothing more to say
                await self._write(self._ws.send(CloseConnection(code=code, reason=reason)))
                with anyio.move_on_after(1.0):
                    while True:
                        data = await self._stream.receive(_READ_SIZE)
                        self._ws.receive_data(data)
                        if any(isinstance(e, CloseConnection) for e in self._ws.events()):
                            break
        await self._stream.aclose()

    async def __aenter__(self) -> WebSocketClient:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()


async def connect(url: str, headers: Iterable[tuple[str, str]] = (), *,
                  ssl_context: ssl.SSLContext | None = None,
                  handshake_timeout: float = 10.0,
                  local_host: str | None = None) -> WebSocketClient:
    """Open ``ws://`` or ``wss://`` ``url``; raise :class:`HandshakeError` if refused.

    No extensions are offered: video is already compressed (see the README).

    :param local_host: the address to connect from (a machine with several).
    """
    parts = urlsplit(url)
    if parts.scheme not in {"ws", "wss"} or not parts.hostname:
        raise ValueError(f"expected a ws:// or wss:// URL, got {url!r}")
    secure = parts.scheme == "wss"
    port = parts.port or (443 if secure else 80)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    with anyio.fail_after(handshake_timeout):
        stream: anyio.abc.ByteStream
        if secure:
            stream = await anyio.connect_tcp(
                parts.hostname, port, tls=True,
                ssl_context=ssl_context or ssl.create_default_context(),
                tls_hostname=parts.hostname, local_host=local_host)
        else:
            stream = await anyio.connect_tcp(parts.hostname, port, local_host=local_host)
        tcp = stream
        try:
            ws = WSConnection(ConnectionType.CLIENT)
            host = parts.netloc.rsplit("@", 1)[-1]
            await stream.send(ws.send(Request(
                host=host, target=target,
                extra_headers=[(k.encode(), v.encode()) for k, v in headers])))
            await _handshake(stream, ws)
        except BaseException:
            await tcp.aclose()
            raise
    return WebSocketClient(stream, ws)


async def _handshake(stream: anyio.abc.ByteStream, ws: WSConnection) -> None:
    status, body = 0, b""
    while True:
        try:
            data = await stream.receive(_READ_SIZE)
        except anyio.EndOfStream:
            raise HandshakeError(status or 502, body) from None
        ws.receive_data(data)
        for event in ws.events():
            if isinstance(event, AcceptConnection):
                return
            if isinstance(event, RejectConnection):
                status = event.status_code
                if not event.has_body:
                    raise HandshakeError(status)
            elif isinstance(event, RejectData):
                body += event.data
                if event.body_finished:
                    raise HandshakeError(status, body)

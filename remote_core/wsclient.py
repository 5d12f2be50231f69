"""A small WebSocket client: websockets' sans-I/O protocol, anyio streams for the bytes.

The protocol object owns framing, masking (in C: a megabyte of video is masked
in tens of microseconds, where a pure-Python mask took milliseconds of the
agent's event loop), pings and the closing handshake; this module only moves
bytes between it and a TCP (or TLS) stream, so the agent and the Python
viewer share one transport with no protocol logic of its own. The server runs
the same library (uvicorn's ``websockets-sansio``).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
from collections import deque
from collections.abc import Iterable
from types import TracebackType
from urllib.parse import urlsplit

import anyio
import anyio.abc
from websockets.client import ClientProtocol
from websockets.exceptions import InvalidState
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.uri import parse_uri

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

    def __init__(self, stream: anyio.abc.ByteStream, protocol: ClientProtocol,
                 frames: Iterable[Frame] = ()) -> None:
        self._stream = stream
        self._protocol = protocol
        self._frames: deque[Frame] = deque(frames)
        self._message: list[bytes | bytearray | memoryview] = []
        self._text = False
        # An uncontended send writes at once: a lock that yields first would hold every
        # frame back a turn of the loop (about 50 µs of a typed word's way). Each send still
        # yields once its bytes are written, so no sender starves another.
        self._send_lock = anyio.Lock(fast_acquire=True)
        self.closed: ConnectionClosed | None = None
        self._unsendable: ConnectionClosed | None = None

    async def _flush(self) -> None:
        """Write what the protocol has queued (frames, a pong, a close answer) in order."""
        async with self._send_lock:
            await self._write_queued()

    async def _write_queued(self) -> None:
        """Under the send lock: write what the protocol has queued until nothing is, so
        that what the reader queued meanwhile (a pong) goes right after it."""
        while chunks := [chunk for chunk in self._protocol.data_to_send() if chunk]:
            for chunk in chunks:
                await self._stream.send(chunk)

    async def send(self, data: bytes) -> None:
        """Send one binary message."""
        if self.closed is not None:
            raise self.closed
        if self._unsendable is not None:
            raise self._unsendable
        async with self._send_lock:
            try:
                self._protocol.send_binary(data)
            except InvalidState:
                # The peer's close frame is in, not yet met by the reader: to a sender the
                # connection is closed all the same, for the peer's reason (a server's
                # "try again later", not a bare 1006, is what the agent's log should say).
                close = self._protocol.close_rcvd
                if close is not None:
                    raise ConnectionClosed(close.code, close.reason) from None
                raise ConnectionClosed(1006, "the connection is closing") from None
            try:
                await self._write_queued()
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                # Only sending is over: what the peer sent before it went stays for the
                # reader, which meets the end itself.
                self._unsendable = ConnectionClosed(1006, "connection lost")
                raise self._unsendable from exc

    async def receive(self) -> bytes | str:
        """The next whole message; raises :class:`ConnectionClosed` at the end."""
        while True:
            while self._frames:
                message = self._assemble(self._frames.popleft())
                if message is not None:
                    return message
            close = self._protocol.close_rcvd
            if close is not None:
                self.closed = ConnectionClosed(close.code, close.reason)
                with contextlib.suppress(Exception):  # the peer need not wait for our half
                    await self._flush()
                await self._drop()
                raise self.closed
            if self.closed is not None:
                raise self.closed
            try:
                data = await self._stream.receive(_READ_SIZE)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError,
                    OSError):
                raise self._lost() from None
            self._protocol.receive_data(data)
            self._frames.extend(e for e in self._protocol.events_received()
                                if isinstance(e, Frame))
            if self._protocol.close_expected() and self._protocol.close_rcvd is None:
                # A protocol error on the peer's side: websockets queued a close frame.
                with contextlib.suppress(Exception):
                    await self._flush()
                exc = self._protocol.parser_exc
                self.closed = ConnectionClosed(1002, str(exc) if exc else "protocol error")
                await self._drop()
                raise self.closed
            # Pongs. A send under way writes them after its own bytes: waiting for it here
            # held every message behind a large frame on a slow link (over 2 Mbit/s, a
            # viewer's acknowledgements and a technician's input up to a second late).
            if not self._send_lock.locked():
                await self._flush()

    def _assemble(self, frame: Frame) -> bytes | str | None:
        """Join a message's frames; the whole message once its last frame is in."""
        if frame.opcode not in (Opcode.TEXT, Opcode.BINARY, Opcode.CONT):
            return None  # pings are answered by the protocol itself; the close is read above
        if frame.opcode is not Opcode.CONT:
            self._text = frame.opcode is Opcode.TEXT
        self._message.append(frame.data)
        if not frame.fin:
            return None
        data, self._message = b"".join(self._message), []
        return data.decode() if self._text else data

    def _lost(self) -> ConnectionClosed:
        self.closed = self.closed or ConnectionClosed(1006, "connection lost")
        return self.closed

    async def close(self, code: int = 1000, reason: str = "") -> None:
        """Start the closing handshake, wait briefly for the peer's answer, drop the socket."""
        if self.closed is None:
            self.closed = ConnectionClosed(code, reason)
            with contextlib.suppress(Exception):  # a broken socket: nothing more to say
                self._protocol.send_close(code, reason)
                await self._flush()
                with anyio.move_on_after(1.0):
                    while self._protocol.close_rcvd is None:
                        self._protocol.receive_data(await self._stream.receive(_READ_SIZE))
        await self._drop()

    async def _drop(self) -> None:
        """Close the socket. Over TLS that sends close_notify and waits for the peer's; a
        peer that hung up first (a server may drop the connection once the closing
        handshake is done, RFC 6455 7.1.1) leaves the stream broken, and anyio has closed
        it all the same: there is nothing to report."""
        with contextlib.suppress(anyio.BrokenResourceError):
            await self._stream.aclose()

    @property
    def raw_socket(self) -> socket.socket | None:
        """The TCP socket underneath, TLS or not (None where the stream has none): for
        what only the kernel knows, such as the bytes it has not sent yet."""
        return self._stream.extra(anyio.abc.SocketAttribute.raw_socket, None)  # noqa: S610

    async def abort(self) -> None:
        """Drop the socket with no closing handshake, as a lost network does: the peer
        meets an abnormal end (1006), and so does this side's reader."""
        self.closed = self.closed or ConnectionClosed(1006, "connection aborted")
        await self._drop()

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
            # The server bounds what it sends; the client takes any size (as the peer's
            # largest frame, a whole raw screen, must pass).
            protocol = ClientProtocol(parse_uri(url), max_size=None)
            request = protocol.connect()
            for name, value in headers:
                request.headers[name] = value
            protocol.send_request(request)
            for data in protocol.data_to_send():
                await stream.send(data)
            frames = await _handshake(stream, protocol)
        except BaseException:
            await tcp.aclose()
            raise
    return WebSocketClient(stream, protocol, frames)


async def _handshake(stream: anyio.abc.ByteStream, protocol: ClientProtocol) -> list[Frame]:
    """Read the server's answer; return the frames that came in the same reads."""
    while True:
        try:
            data = await stream.receive(_READ_SIZE)
        except anyio.EndOfStream:
            raise HandshakeError(502) from None
        except anyio.BrokenResourceError:  # reset: a lost connection, not a refusal
            raise ConnectionResetError("the connection was reset during the WebSocket "
                                       "upgrade") from None
        protocol.receive_data(data)
        events = protocol.events_received()
        for event in events:
            if isinstance(event, Response):
                if protocol.handshake_exc is not None:
                    raise HandshakeError(event.status_code, bytes(event.body or b""))
                return [e for e in events if isinstance(e, Frame)]

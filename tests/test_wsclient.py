"""The WebSocket client against a real WebSocket server (the websockets library) on loopback."""

from __future__ import annotations

import http
import socket
import ssl
import struct
import threading

import anyio
import pytest
import trustme
from websockets.asyncio.server import serve
from websockets.frames import Frame, Opcode
from websockets.protocol import State
from websockets.server import ServerProtocol

from remote_core.wsclient import ConnectionClosed, HandshakeError, connect, ws_url


async def _handler(ws):
    seen_headers = ws.request.headers.get("X-Machine-UID", "")
    async for message in ws:
        if message == b"close":
            await ws.close(4001, "asked to")
            return
        if message == b"last words":
            await ws.send(b"last words")
            await ws.close(4002, "going away")
            return
        if message == b"headers":
            await ws.send(seen_headers.encode())
            continue
        if message == b"ping":
            await ws.ping()
        await ws.send(message)


def _refuse(connection, request):
    if request.path == "/refused":
        return connection.respond(http.HTTPStatus.FORBIDDEN, "no\n")
    return None


@pytest.fixture
async def server_url():
    async with serve(_handler, "127.0.0.1", 0, process_request=_refuse,
                     max_size=None, compression=None) as server:
        port = server.sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"


def test_ws_url_derivation():
    assert ws_url("http://h:8080", "/ws/agent") == "ws://h:8080/ws/agent"
    assert ws_url("https://h/", "/ws/viewer") == "wss://h/ws/viewer"
    with pytest.raises(ValueError, match="http"):
        ws_url("ftp://h", "/x")


@pytest.mark.anyio
async def test_echo_of_large_binary_messages_and_headers(server_url):
    async with await connect(ws_url(server_url, "/ws"), [("X-Machine-UID", "m-1")]) as ws:
        big = bytes(range(256)) * 8192  # 2 MiB
        await ws.send(big)
        assert await ws.receive() == big
        await ws.send(b"headers")
        assert await ws.receive() == b"m-1"
        await ws.send(b"ping")  # the server pings first; the client answers on its own
        assert await ws.receive() == b"ping"


@pytest.mark.anyio
async def test_peer_close_code_and_reason_are_reported(server_url):
    ws = await connect(ws_url(server_url, "/ws"))
    await ws.send(b"close")
    with pytest.raises(ConnectionClosed) as info:
        await ws.receive()
    assert (info.value.code, info.value.reason) == (4001, "asked to")
    with pytest.raises(ConnectionClosed):
        await ws.send(b"after close")
    await ws.close()


@pytest.mark.anyio
async def test_a_send_after_the_peers_close_arrived_is_connection_closed(server_url):
    """The close frame came in with the last message: the reader has not yet met it, but
    a sender (a heartbeat task) must see a closed connection, not the protocol's state error."""
    ws = await connect(ws_url(server_url, "/ws"))
    await ws.send(b"last words")
    await anyio.sleep(0.3)  # the message and the close frame wait in one read
    assert await ws.receive() == b"last words"
    with pytest.raises(ConnectionClosed) as sent:
        await ws.send(b"heartbeat")
    assert (sent.value.code, sent.value.reason) == (4002, "going away")  # the peer's reason
    with pytest.raises(ConnectionClosed) as info:
        await ws.receive()
    assert (info.value.code, info.value.reason) == (4002, "going away")
    await ws.close()


@pytest.mark.anyio
async def test_refused_upgrade_is_a_handshake_error(server_url):
    with pytest.raises(HandshakeError) as info:
        await connect(ws_url(server_url, "/refused"))
    assert info.value.status == 403


@pytest.mark.anyio
async def test_concurrent_senders_do_not_interleave_frames(server_url):
    async with await connect(ws_url(server_url, "/ws")) as ws:
        payloads = [bytes([i]) * 100_000 for i in range(20)]
        async with anyio.create_task_group() as tg:
            for p in payloads:
                tg.start_soon(ws.send, p)
        received = [await ws.receive() for _ in payloads]
        assert sorted(received) == sorted(payloads)


@pytest.mark.anyio
async def test_an_uncontended_send_writes_before_other_ready_tasks_run(server_url):
    """A frame goes to the socket at once: a send that yielded to the loop first would let
    whatever else was ready run ahead of it (a typed word's frame waited a turn)."""
    async with await connect(ws_url(server_url, "/ws")) as ws:
        order: list[str] = []
        stream = ws._stream
        write = stream.send

        async def written(data: bytes) -> None:
            order.append("written")
            await write(data)

        async def other() -> None:
            order.append("other ran")

        stream.send = written
        async with anyio.create_task_group() as tg:
            tg.start_soon(other)  # ready before the send begins
            await ws.send(b"typed")
        assert order == ["written", "other ran"]
        assert await ws.receive() == b"typed"


@pytest.mark.anyio
async def test_connection_refused_raises_oserror():
    with pytest.raises(OSError):
        await connect("ws://127.0.0.1:9/ws")


@pytest.mark.anyio
async def test_a_reset_during_the_upgrade_is_a_lost_connection():
    """A server that resets the connection instead of answering (overloaded, or a proxy
    giving up) is a connection lost, which agents retry quietly: not an error of anyio's."""
    async def reset(client: anyio.abc.SocketStream) -> None:
        await client.receive()  # the upgrade request
        raw = client.extra(anyio.abc.SocketAttribute.raw_socket)
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        await client.aclose()

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, reset)
        with pytest.raises(ConnectionResetError, match="reset during the WebSocket upgrade"):
            await connect(f"ws://127.0.0.1:{port}/ws")
        group.cancel_scope.cancel()


def _hang_up_after_close(listener: socket.socket, context: ssl.SSLContext) -> None:
    """A TLS WebSocket server for one client: it answers the closing handshake, then
    drops the connection without TLS's close_notify, as a proxy may."""
    raw, _ = listener.accept()
    with context.wrap_socket(raw, server_side=True) as tls:
        ws = ServerProtocol()
        while ws.close_rcvd is None:
            ws.receive_data(tls.recv(65536))
            for event in ws.events_received():
                if ws.state is State.CONNECTING:
                    ws.send_response(ws.accept(event))
            tls.sendall(b"".join(ws.data_to_send()))
    # leaving the block closes the socket without unwrap(): no close_notify


@pytest.mark.anyio
async def test_a_peer_that_hangs_up_after_the_closing_handshake_is_a_clean_close():
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        server = threading.Thread(target=_hang_up_after_close,
                                  args=(listener, server_context), daemon=True)
        server.start()
        ws = await connect(f"wss://127.0.0.1:{port}/ws", ssl_context=client_context)
        await ws.close()  # the close frame answered, then no close_notify: not an error
        assert ws.closed is not None and ws.closed.code == 1000
        server.join(5)


def _talk_while_not_reading(listener: socket.socket, reading: threading.Event,
                            received: list[Frame]) -> None:
    """A WebSocket server for one client that, once the client's message has begun to
    come, sends a message and a ping and then reads nothing until ``reading`` is set: the
    client's send fills the socket and waits. Then it reads the client's frames into
    ``received`` until the message and a pong are in."""
    raw, _ = listener.accept()
    with raw:
        ws = ServerProtocol(max_size=None)
        while ws.state is State.CONNECTING:
            ws.receive_data(raw.recv(65536))
            for event in ws.events_received():
                ws.send_response(ws.accept(event))
        raw.sendall(b"".join(ws.data_to_send()))
        ws.receive_data(raw.recv(65536))  # the message's first bytes
        ws.send_binary(b"input")
        ws.send_ping(b"are you there")
        raw.sendall(b"".join(ws.data_to_send()))
        reading.wait(10)
        while {Opcode.BINARY, Opcode.PONG} - {frame.opcode for frame in received}:
            ws.receive_data(raw.recv(1 << 20))
            received.extend(e for e in ws.events_received() if isinstance(e, Frame))


@pytest.mark.anyio
async def test_messages_come_in_while_a_large_send_waits_for_the_socket():
    """A frame the link takes seconds to carry holds the socket; what the peer says
    meanwhile (a viewer's acknowledgement, a technician's keystroke) is read at once, not
    after it, and the ping among it is answered right after the frame."""
    reading, received = threading.Event(), []
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        server = threading.Thread(target=_talk_while_not_reading,
                                  args=(listener, reading, received), daemon=True)
        server.start()
        async with await connect(f"ws://127.0.0.1:{port}/ws") as ws:
            big = bytes(64 << 20)  # more than the socket buffers on both sides hold
            sent = anyio.Event()

            async def send_big() -> None:
                await ws.send(big)
                sent.set()

            async with anyio.create_task_group() as group:
                group.start_soon(send_big)
                with anyio.fail_after(5):
                    assert await ws.receive() == b"input"
                assert not sent.is_set()  # the large frame still waits for the socket
                reading.set()
                with anyio.fail_after(30):
                    await sent.wait()
            server.join(30)
    assert not server.is_alive()
    assert [frame.opcode for frame in received] == [Opcode.BINARY, Opcode.PONG]
    assert len(received[0].data) == len(big)

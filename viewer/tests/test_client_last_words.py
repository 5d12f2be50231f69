"""The viewer client hears a server's last words: a frame, the ``Disconnect`` and the close
frame that come in one read are all delivered, although acknowledging the frame finds the
connection already closing.

The server is scripted on websockets' sans-I/O protocol over a real loopback socket, so the
test decides that everything arrives in one TCP write.
"""

from __future__ import annotations

import anyio
import numpy as np
import pytest
from remote_codec_raw_zstd import SPEC
from remote_codec_raw_zstd.encoder import RawZstdEncoder
from remote_viewer.client import open_viewer
from websockets.http11 import Request
from websockets.server import ServerProtocol

from remote_core.codecs import encoder_config
from remote_core.protocol import Connection, Role, pb
from remote_core.video import to_wire


async def _last_words(stream: anyio.abc.SocketStream) -> None:
    """Accept, answer the session request, then send a frame, a Disconnect and the close
    frame in a single write; read until the client leaves."""
    protocol = ServerProtocol()
    conn = Connection(Role.SERVER, Role.VIEWER)
    while True:
        protocol.receive_data(await stream.receive())
        requests = [e for e in protocol.events_received() if isinstance(e, Request)]
        if requests:
            protocol.send_response(protocol.accept(requests[0]))
            break
    await stream.send(b"".join(protocol.data_to_send()))
    while not protocol.events_received():
        protocol.receive_data(await stream.receive())
    image = np.full((48, 64, 4), 200, np.uint8)
    frame = RawZstdEncoder(encoder_config(64, 48)).encode(image, keyframe=True)
    assert frame is not None
    video = to_wire(frame, SPEC)
    video.sequence = 1
    for kind, payload in [
            ("session_response", pb.SessionResponse(success=True, session_id="s-1")),
            ("video_frame", video),
            ("disconnect", pb.Disconnect(reason="the end user ended the session"))]:
        protocol.send_binary(conn.send(kind, payload))
        if kind == "session_response":
            conn.authenticated()
    protocol.send_close(1000, "the end user ended the session")
    await stream.send(b"".join(protocol.data_to_send()))
    with anyio.move_on_after(5):
        try:
            while await stream.receive():
                pass
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            pass


@pytest.mark.anyio
async def test_a_frame_the_disconnect_and_the_close_in_one_read_are_all_delivered() -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with anyio.create_task_group() as group:
        group.start_soon(listener.serve, _last_words)
        async with open_viewer(f"http://127.0.0.1:{port}", "token") as viewer:
            frame = await viewer.next_frame(5)
            assert frame.image.shape == (48, 64, 4)
            _, goodbye = await viewer.receive("disconnect", within=5)
            assert goodbye.reason == "the end user ended the session"
        group.cancel_scope.cancel()
    await listener.aclose()


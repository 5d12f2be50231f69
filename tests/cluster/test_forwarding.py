"""A viewer forwarded node to node: the session node's frames passed on whole and exact,
its flow control and its words reaching the viewer, the viewer's pings answered."""

from __future__ import annotations

import os
import uuid
from typing import Any

import anyio
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from remote_core.protocol import pb, wrap

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.anyio]


class Peer:
    """An agent or a viewer of the test's own making: ``Message`` over a real WebSocket."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws

    @classmethod
    async def open(cls, node_url: str, path: str, request: pb.SessionRequest,
                   **kwargs: Any) -> Peer:
        ws = await connect(node_url.replace("http://", "ws://") + path, max_size=None,
                           open_timeout=10, **kwargs)
        peer = cls(ws)
        await peer.send("session_request", request)
        return peer

    async def send(self, kind: str, payload: Any) -> None:
        await self.ws.send(wrap(kind, payload))

    async def expect(self, kind: str, wait: float = 10) -> Any:
        """The next message of ``kind`` (heartbeat acks and stream requests skipped)."""
        while True:
            with anyio.fail_after(wait):
                data = await self.ws.recv()
            message = pb.Message()
            message.ParseFromString(data)
            got = message.WhichOneof("payload")
            if got == kind:
                return getattr(message, kind)
            assert got in {"heartbeat_ack", "start_stream"}, f"expected {kind}, got {got}"

    async def accepted(self) -> str:
        response = await self.expect("session_response")
        assert response.success, response.error
        return str(response.session_id)


def frame(sequence: int, data: bytes, keyframe: bool = False) -> pb.VideoFrame:
    return pb.VideoFrame(timestamp=sequence, sequence=sequence, display_id=1, raw=pb.RawFrame(
        width=10, height=10, data=data, is_keyframe=keyframe))


async def agent_on_a(cluster) -> tuple[Peer, str]:
    """An agent of the test's making on node a, its session known on every node."""
    agent_id, key = cluster.api("c").machine_with_key(organization="Acme")
    agent = await Peer.open(cluster.nodes["a"].url, "/ws/agent", pb.SessionRequest(
        agent_id=agent_id, session_token=key, session_type=pb.SCREEN_CONTROL,
        client_version="1.2.3"))
    session_id = await agent.accepted()
    for node in "bc":
        cluster.api(node).live_session(agent_id)
    return agent, session_id


async def viewer(cluster, node: str, session_id: str, **kwargs: Any) -> Peer:
    token = cluster.api(node).viewer_token(session_id)
    peer = await Peer.open(cluster.nodes[node].url, "/ws/viewer", pb.SessionRequest(
        session_token=token, session_type=pb.SCREEN_CONTROL), **kwargs)
    await peer.accepted()
    return peer


async def test_frames_reach_a_forwarded_viewer_exact_while_its_pings_are_answered(cluster):
    """Frames of many TCP segments each cross node b byte for byte, and node b's own
    pongs go out between them, never inside one (the viewer's parser would fail)."""
    agent, session_id = await agent_on_a(cluster)
    forwarded = await viewer(cluster, "b", session_id, ping_interval=None)
    for sequence in range(60):
        data = os.urandom(300_000 + sequence * 7919)
        await agent.send("video_frame", frame(sequence, data, keyframe=sequence == 0))
        pong = await forwarded.ws.ping(uuid.uuid4().bytes)
        got = await forwarded.expect("video_frame")
        assert (got.sequence, got.raw.data) == (sequence, data)
        with anyio.fail_after(10):
            await pong
        await forwarded.send("video_ack", pb.VideoAck(sequence=sequence, timestamp=sequence))


async def test_a_stalled_forwarded_viewer_slows_no_one_and_is_not_buffered_by_its_node(
        cluster):
    """The forwarding node reads the session node's frames only as fast as the viewer
    takes them, so its backlog stays in the session node's outbox, which drops video to
    the next keyframe (as for a viewer of that node), not in the forwarding node."""
    agent, session_id = await agent_on_a(cluster)
    # max_queue=1: it stops reading after one message; the kernel buffers fill behind it.
    stalled = await viewer(cluster, "b", session_id, max_queue=1)
    reader = await viewer(cluster, "a", session_id)
    size, count = 256 * 1024, 400  # 100 MB, against an 8 MB outbox (viewer_buffer_bytes)
    data = os.urandom(size)
    for sequence in range(count):
        await agent.send("video_frame", frame(sequence, data, keyframe=sequence % 25 == 0))
        assert (await reader.expect("video_frame")).sequence == sequence  # in step
    marker = count + 24
    await agent.send("video_frame", frame(marker, data, keyframe=True))
    previous, gaps, read = -1, 0, 0
    while previous != marker:
        got = await stalled.expect("video_frame")
        read += got.ByteSize()
        if got.sequence != previous + 1:
            assert got.raw.is_keyframe, f"frame {got.sequence} after a gap is a delta frame"
            gaps += 1
        previous = got.sequence
    assert gaps > 0, "every frame reached the stalled viewer: its node buffered them all"
    assert read < 40 * 1024 * 1024, f"the stalled viewer was sent {read} bytes of backlog"


async def test_the_session_nodes_close_reaches_a_forwarded_viewer_in_its_words(cluster):
    """A viewer that breaks the protocol is closed by the session's node; forwarded, it
    hears the same code and reason as a viewer of that node."""
    _, session_id = await agent_on_a(cluster)
    closes = []
    for node in "ab":
        peer = await viewer(cluster, node, session_id)
        await peer.ws.send("text is not a Message")
        with pytest.raises(ConnectionClosed) as closed:
            await peer.expect("video_frame")
        assert closed.value.rcvd is not None, f"node {node}: no close frame"
        closes.append((closed.value.rcvd.code, closed.value.rcvd.reason))
    assert closes[0] == closes[1] and closes[0][0] == 1003, closes


async def test_a_forwarded_viewers_address_is_the_one_the_session_node_records(cluster):
    """Node b believes the address its trusted proxy (here: this test, from 127.0.0.1)
    names, and names it in turn to node a, which audits the viewer under it."""
    _, session_id = await agent_on_a(cluster)
    await viewer(cluster, "b", session_id,
                 additional_headers={"X-Forwarded-For": "198.51.100.23"})
    joined = cluster.api("c").events(session_id, "viewer.joined")
    assert [event["client_ip"] for event in joined] == ["198.51.100.23"]

"""Bad input closes only the offending socket; silence and timeouts (CONTRACT 1)."""

from __future__ import annotations

import anyio
import pytest
from remote_server.testing.liveserver import LiveServer
from websockets.exceptions import ConnectionClosed, InvalidStatus

from remote_core.protocol import pb, wrap

from .conftest import MAX_MESSAGE, Admin, Peer

pytestmark = pytest.mark.anyio


async def session_with_two_viewers(server, admin: Admin) -> tuple[Peer, Peer, Peer]:
    agent = await Peer.agent(server, admin.keyed_machine()[1])
    session_id = await agent.accepted()
    first = await Peer.viewer(server, admin.viewer_token(session_id))
    await first.accepted()
    second = await Peer.viewer(server, admin.viewer_token(session_id))
    await second.accepted()
    return agent, first, second


async def still_relaying(agent: Peer, viewer: Peer) -> None:
    await agent.send("video_frame", pb.VideoFrame(sequence=77, raw=pb.RawFrame(is_keyframe=True)))
    assert (await viewer.expect("video_frame")).sequence == 77


@pytest.mark.parametrize(("bad", "code"), [
    (b"\x00" * (MAX_MESSAGE + 1), 1009),  # over the size limit
    (b"\xff\xff\xff\xff", 1007),  # not a Message
    ("text is not allowed", 1003),
    (wrap("session_request", pb.SessionRequest()), None),  # a second request: dropped
])
async def test_bad_viewer_input_closes_only_that_viewer(server, admin: Admin, bad, code) -> None:
    agent, offender, bystander = await session_with_two_viewers(server, admin)
    try:
        await offender.ws.send(bad)
    except ConnectionClosed:  # the server may close (1009) before the rest has been sent
        pass
    if code is None:
        await offender.send("heartbeat", pb.Heartbeat(timestamp=1))
        await offender.expect("heartbeat_ack")
    else:
        assert (await offender.closed())[0] == code
    await still_relaying(agent, bystander)


async def test_garbage_from_an_agent_closes_its_socket_with_1007(server, admin: Admin) -> None:
    agent = await Peer.agent(server, admin.keyed_machine()[1])
    await agent.accepted()
    other = await Peer.agent(server, admin.keyed_machine()[1])
    await other.accepted()
    await agent.ws.send(b"\x0a\x05\x01")  # a length that runs past the end
    assert (await agent.closed())[0] == 1007
    await other.send("heartbeat", pb.Heartbeat(timestamp=2))
    assert (await other.expect("heartbeat_ack")).client_timestamp == 2


@pytest.mark.parametrize("path", ["/ws/agent", "/ws/viewer"])
async def test_the_first_message_must_be_a_session_request(server, path: str) -> None:
    peer = await Peer.open(server, path)
    await peer.send("heartbeat", pb.Heartbeat(timestamp=1))
    assert (await peer.closed())[0] == 1008


async def test_a_foreign_origin_is_refused_at_the_upgrade(server, admin: Admin) -> None:
    with pytest.raises(InvalidStatus) as refused:
        await Peer.open(server, "/ws/viewer", origin="http://evil.example")
    assert refused.value.response.status_code == 403
    own = await Peer.open(server, "/ws/viewer", origin=server.base_url)
    await own.send("session_request", pb.SessionRequest(session_token="x"))
    assert not (await own.response()).success  # admitted to the handshake, then judged


async def test_video_sockets_do_not_negotiate_compression(server, admin: Admin) -> None:
    agent = await Peer.agent(server, admin.keyed_machine()[1])  # the client offers deflate
    assert agent.ws.protocol.extensions == []


async def test_a_silent_peer_is_disconnected(impatient: LiveServer) -> None:
    admin = Admin(impatient)
    agent = await Peer.agent(impatient, admin.keyed_machine()[1])
    session_id = await agent.accepted()
    viewer = await Peer.viewer(impatient, admin.viewer_token(session_id))
    await viewer.accepted()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:  # the agent keeps beating, the viewer not
            async def beat() -> None:
                for i in range(20):
                    await agent.send("heartbeat", pb.Heartbeat(timestamp=i))
                    await anyio.sleep(0.2)

            tg.start_soon(beat)
            disconnect = await viewer.expect("disconnect")
            assert disconnect.reason == "no message for 1.5 s (heartbeat timeout)"
            assert (await viewer.closed())[0] == 1008
            tg.cancel_scope.cancel()
    assert impatient.ctx.registry.session(session_id) is not None  # the agent is still there
    assert (await agent.expect("stop_stream", skip=frozenset({"heartbeat_ack",
                                                              "start_stream"})))
    assert (await agent.expect("disconnect", skip=frozenset({"heartbeat_ack"}))).reason.startswith(
        "no message for 1.5 s")


async def test_no_session_request_in_time_closes_with_1008(impatient: LiveServer) -> None:
    peer = await Peer.open(impatient, "/ws/agent")
    assert (await peer.closed(wait=5))[0] == 1008


async def test_a_silent_agent_ends_its_session_and_viewers_hear_why(impatient: LiveServer) -> None:
    admin = Admin(impatient)
    agent = await Peer.agent(impatient, admin.keyed_machine()[1])
    session_id = await agent.accepted()
    viewer = await Peer.viewer(impatient, admin.viewer_token(session_id))
    await viewer.accepted()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            async def beat() -> None:
                for i in range(20):
                    await viewer.send("heartbeat", pb.Heartbeat(timestamp=i))
                    await anyio.sleep(0.2)

            tg.start_soon(beat)
            disconnect = await viewer.expect("disconnect")
            tg.cancel_scope.cancel()
    assert disconnect.reason == "no message for 1.5 s (heartbeat timeout)"
    assert impatient.ctx.registry.session(session_id) is None

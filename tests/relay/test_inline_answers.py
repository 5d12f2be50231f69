"""Heartbeats answered and video frames relayed where the socket reads them
(``web/wsprotocol.py``), never ahead of what the peer said before them, and never
differently from the reader's own answer."""

from __future__ import annotations

import anyio
import pytest
from remote_server.observe.counters import RELAY
from remote_server.testing.liveserver import LiveServer

from remote_core.protocol import pb, wrap

from .conftest import Admin, Peer

pytestmark = pytest.mark.anyio


def in_one_write(agent: Peer, *messages: bytes) -> None:
    """Send ``messages`` in one write, so the server reads them together."""
    protocol = agent.ws.protocol
    for message in messages:
        protocol.send_binary(message)
    agent.ws.transport.write(b"".join(protocol.data_to_send()))


async def test_an_idle_agents_heartbeats_are_answered_as_they_are_read(
        server: LiveServer, admin: Admin) -> None:
    agent = await Peer.agent(server, admin.keyed_machine()[1])
    await agent.accepted()
    await anyio.sleep(0.2)  # the reader waits for the next message: nothing is pending
    before = RELAY.heartbeats_inline
    for timestamp in range(1, 6):
        await agent.send("heartbeat", pb.Heartbeat(timestamp=timestamp))
        ack = await agent.expect("heartbeat_ack")
        assert ack.client_timestamp == timestamp and ack.server_timestamp > 0
        await anyio.sleep(0.05)
    assert RELAY.heartbeats_inline - before == 5


async def test_a_heartbeats_answer_never_overtakes_what_came_before_it(
        server: LiveServer, admin: Admin) -> None:
    """A client may use a heartbeat as a barrier: once its ack is in, everything it sent
    before has been handled (here: the agent's display info stored). A heartbeat read
    behind a message still waiting for the reader is left to the reader."""
    agent = await Peer.agent(server, admin.keyed_machine()[1])
    session_id = await agent.accepted()
    session = server.ctx.registry.live(session_id)
    await anyio.sleep(0.2)  # as above: the reader idle, so each round starts from nothing
    for count in range(1, 11):
        before = RELAY.heartbeats_inline
        info = pb.DisplayInfo(displays=[pb.Display(id=1, name=f"screen-{count}",
                                                   width=800, height=600)])
        in_one_write(agent, wrap("display_info", info),
                     wrap("heartbeat", pb.Heartbeat(timestamp=count)))
        assert (await agent.expect("heartbeat_ack")).client_timestamp == count
        assert session.display_info.displays[0].name == f"screen-{count}"
        assert RELAY.heartbeats_inline == before  # the reader answered, in order
        await anyio.sleep(0.05)


async def test_a_heartbeat_that_does_not_parse_still_closes_the_socket_with_1007(
        server: LiveServer, admin: Admin) -> None:
    agent = await Peer.agent(server, admin.keyed_machine()[1])
    await agent.accepted()
    await anyio.sleep(0.2)  # as above: read by the inline path, not behind another message
    await agent.ws.send(b"\x92\x03\x01\xff")  # field 50 (heartbeat), one byte of garbage
    assert (await agent.closed())[0] == 1007


async def test_a_status_report_with_nothing_new_is_taken_as_it_is_read(
        server: LiveServer, admin: Admin) -> None:
    """An idle agent's report every minute is the one before it: taken where it is read (the
    machine marked seen for the next batched write), while a report that says something
    new still reaches the reader, which stores it."""
    agent_id, key = admin.keyed_machine()
    agent = await Peer.agent(server, key)
    await agent.accepted()
    await anyio.sleep(0.2)  # as above

    async def report(hostname: str) -> None:
        await agent.send("agent_status", pb.AgentStatus(
            hostname=hostname, os_version="Debian 12", agent_version="1.0.0"))
        await agent.send("heartbeat", pb.Heartbeat(timestamp=1))  # once answered, all done
        await agent.expect("heartbeat_ack")
        await anyio.sleep(0.05)

    before = RELAY.reports_inline
    await report("desk-1")  # the first: the reader stores it
    assert RELAY.reports_inline == before
    for _ in range(3):
        await report("desk-1")
    assert RELAY.reports_inline - before == 3
    await report("desk-2")  # something new
    assert RELAY.reports_inline - before == 3
    stored = admin.ok("GET", f"/api/machines/{agent_id}")
    assert stored["hostname"] == "desk-2"


def _frame(sequence: int, size: int = 400) -> pb.VideoFrame:
    return pb.VideoFrame(timestamp=sequence, sequence=sequence, display_id=1, raw=pb.RawFrame(
        width=10, height=10, data=bytes([sequence % 256]) * size, is_keyframe=True))


async def _watched(server: LiveServer, admin: Admin) -> tuple[Peer, Peer]:
    """An agent and a viewer of its session, the agent's reader waiting for the next
    message (so what the agent sends next is read where the socket reads it)."""
    agent = await Peer.agent(server, admin.keyed_machine()[1])
    session_id = await agent.accepted()
    viewer = await Peer.viewer(server, admin.viewer_token(session_id))
    await viewer.accepted()
    await agent.expect("start_stream")
    await anyio.sleep(0.2)
    return agent, viewer


async def test_an_agents_video_frames_are_relayed_as_they_are_read(
        server: LiveServer, admin: Admin) -> None:
    agent, viewer = await _watched(server, admin)
    before = RELAY.frames_inline
    for sequence in range(1, 6):
        await agent.send("video_frame", _frame(sequence))
        got = await viewer.expect("video_frame")
        assert (got.sequence, got.raw.data) == (sequence, bytes([sequence]) * 400)
        await anyio.sleep(0.05)
    assert RELAY.frames_inline - before == 5


async def test_a_video_frame_never_overtakes_what_the_agent_said_before_it(
        server: LiveServer, admin: Admin) -> None:
    """A frame read behind a message still waiting for the agent's reader is left to the
    reader, so the viewer hears both in the order the agent sent them."""
    agent, viewer = await _watched(server, admin)
    for count in range(1, 6):
        before = RELAY.frames_inline
        info = pb.DisplayInfo(displays=[pb.Display(id=1, name=f"screen-{count}",
                                                   width=800, height=600)])
        in_one_write(agent, wrap("display_info", info), wrap("video_frame", _frame(count)))
        assert (await viewer.expect("display_info")).displays[0].name == f"screen-{count}"
        assert (await viewer.expect("video_frame")).sequence == count
        assert RELAY.frames_inline == before  # the reader relayed it, in order
        await anyio.sleep(0.05)


async def test_a_frame_that_finds_an_outbox_holding_one_is_left_to_the_reader(
        server: LiveServer, admin: Admin) -> None:
    """A viewer that stops reading fills its socket's buffers, then its outbox: a frame
    that finds the outbox holding one takes the reader's path, which reads the agent a
    message at a time; once the viewer reads again it sees every frame in order (the
    outbox keeps the newest keyframe when it drops)."""
    agent = await Peer.agent(server, admin.keyed_machine()[1])
    session_id = await agent.accepted()
    viewer = await Peer.viewer(server, admin.viewer_token(session_id), max_queue=1)
    await viewer.accepted()
    viewer_id = (await agent.expect("start_stream")).viewer_id
    outbox = server.ctx.registry.live(session_id).viewers[viewer_id].outbox
    sequence = 0
    with anyio.fail_after(20):
        while not outbox:  # written at once until the socket's buffers are full
            sequence += 1
            await agent.send("video_frame", _frame(sequence, 64 * 1024))
            await anyio.sleep(0.005)
    await anyio.sleep(0.2)
    before = RELAY.frames_inline
    sequence += 1
    await agent.send("video_frame", _frame(sequence))
    await anyio.sleep(0.2)
    assert RELAY.frames_inline == before  # the reader relayed it, behind the queue
    seen = 0
    while seen != sequence:
        got = await viewer.expect("video_frame", skip=frozenset({"heartbeat_ack",
                                                                 "start_stream"}))
        assert got.sequence > seen
        seen = got.sequence


async def test_a_message_for_a_waiting_writer_is_written_at_once(
        server: LiveServer, admin: Admin) -> None:
    """A frame for a viewer whose writer waits on an empty outbox, and an input event
    for the agent likewise, are written as they are queued: no writer task is woken."""
    agent, viewer = await _watched(server, admin)
    for sequence in range(1, 6):
        before = (RELAY.messages_direct, RELAY.frames_out)
        await agent.send("video_frame", _frame(sequence))
        assert (await viewer.expect("video_frame")).sequence == sequence
        assert (RELAY.messages_direct - before[0], RELAY.frames_out - before[1]) == (1, 1)
        before = (RELAY.messages_direct, RELAY.frames_out)
        await viewer.send("mouse_event", pb.MouseEvent(x=sequence, y=2))
        assert (await agent.expect("mouse_event")).x == sequence
        assert (RELAY.messages_direct - before[0], RELAY.frames_out - before[1]) == (1, 0)
        await anyio.sleep(0.05)

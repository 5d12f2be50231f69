"""T31: malformed and ambiguous wire bytes, sent over real sockets.

The unit-level fuzzing is tests/test_protocol.py (Hypothesis) and bench/fuzz.py
(atheris); garbage, text and oversize frames over sockets are in
tests/relay/test_limits.py. Here: truncated varints, empty and unknown
messages, SGROUP chains, two members of the oneof (protobuf keeps the last,
so the relay must judge and forward the same one), and a relayed kind whose
inner bytes do not parse, which the relay used to pass on for the receiving
agent or viewer to choke on. In every case only the offending socket suffers.
"""

from __future__ import annotations

from typing import Any

import pytest
from remote_server.testing.liveserver import LiveServer
from websockets.exceptions import ConnectionClosed

from remote_core.protocol import pb, wrap

from .conftest import Admin, Peer

pytestmark = pytest.mark.anyio

CHAT = pb.ChatMessage(id="1", sender="technician", content="hello")


def field(number: int, inner: bytes) -> bytes:
    """One length-delimited field of ``Message`` holding ``inner`` as it is."""
    tag = number << 3 | 2
    length = len(inner)
    head = bytearray([tag & 0x7F | 0x80, tag >> 7]) if tag > 0x7F else bytearray([tag])
    while True:
        byte, length = length & 0x7F, length >> 7
        head.append(byte | (0x80 if length else 0))
        if not length:
            return bytes(head) + inner


# name -> (bytes a control viewer sends, close code or None for "dropped, socket stays")
FROM_VIEWER: dict[str, tuple[bytes | str, int | None]] = {
    "truncated varint": (b"\x80", 1007),
    "tag without a length": (b"\x0a", 1007),
    "length past the end": (b"\xa2\x01\x05ab", 1007),
    "empty Message": (b"", None),
    "unknown field 999": (bytes.fromhex("ba3e0100"), None),
    "a chain of start-group tags": (b"\x0b" * 20_000, 1007),
    "mouse_event, then admin_command": (
        wrap("mouse_event", pb.MouseEvent(x=1)) + wrap("admin_command", pb.AdminCommand()),
        None),
    "chat_message whose inner bytes do not parse": (field(60, b"\xff\xff\xff\xff"), 1007),
    "chat_message nesting groups inside": (field(60, b"\x0b" * 5_000), 1007),
    "key_event whose inner bytes stop short": (field(21, b"\x2a\x05ab"), 1007),
    "a text frame": ("hello", 1003),
}


async def live(server: LiveServer, admin: Admin) -> tuple[Peer, Peer, Peer]:
    """An agent, a bystanding viewer and the viewer that will misbehave."""
    agent = await Peer.agent(server, admin.keyed_machine()[1])
    session_id = await agent.accepted()
    viewers = []
    for _ in range(2):
        viewer = await Peer.viewer(server, admin.viewer_token(session_id))
        await viewer.accepted()
        await agent.expect("start_stream")
        viewers.append(viewer)
    return agent, viewers[0], viewers[1]


async def received_raw(peer: Peer, stamp: int) -> list[bytes]:
    """Everything ``peer`` receives until the ack of a heartbeat it sends now."""
    await peer.send("heartbeat", pb.Heartbeat(timestamp=stamp))
    raw: list[bytes] = []
    while True:
        data = await peer.ws.recv()
        assert isinstance(data, bytes)
        message = pb.Message()
        message.ParseFromString(data)  # everything that arrives parses, inner bytes included
        if message.WhichOneof("payload") == "heartbeat_ack":
            return raw
        raw.append(data)


async def still_serving(agent: Peer, bystander: Peer) -> None:
    await agent.send("video_frame", pb.VideoFrame(sequence=5, raw=pb.RawFrame(is_keyframe=True)))
    assert (await bystander.expect("video_frame")).sequence == 5


@pytest.mark.parametrize("case", list(FROM_VIEWER))
async def test_t31_a_viewers_malformed_bytes_harm_only_that_viewer(
        server: LiveServer, admin: Admin, case: str) -> None:
    agent, bystander, offender = await live(server, admin)
    data, close_code = FROM_VIEWER[case]
    await offender.ws.send(data)
    if close_code is None:
        await offender.send("heartbeat", pb.Heartbeat(timestamp=1))
        await offender.expect("heartbeat_ack")
    else:
        assert (await offender.closed())[0] == close_code
    relayed = await received_raw(agent, 2)
    assert all(pb.Message.FromString(d).WhichOneof("payload") in ("stop_stream", "mouse_event")
               for d in relayed), relayed
    assert not any(pb.Message.FromString(d).HasField("admin_command") for d in relayed)
    await still_serving(agent, bystander)


async def test_t31_of_two_oneof_members_the_one_judged_is_the_one_relayed(
        server: LiveServer, admin: Admin) -> None:
    """protobuf keeps the last member; the relay forwards exactly that, re-encoded alone."""
    agent, _bystander, viewer = await live(server, admin)
    await viewer.ws.send(wrap("admin_command", pb.AdminCommand(command=pb.ADMIN_UNINSTALL))
                         + wrap("chat_message", CHAT))
    relayed = await received_raw(agent, 3)
    assert relayed == [wrap("chat_message", CHAT)]


# name -> (bytes an agent sends, close code or None)
FROM_AGENT: dict[str, tuple[bytes, int | None]] = {
    "cursor_position whose inner bytes do not parse": (field(16, b"\xff\xff\xff"), 1007),
    "chat_message nesting groups inside": (field(60, b"\x0b" * 5_000), 1007),
    "clipboard_data whose inner bytes stop short": (field(30, b"\x12\x09ab"), 1007),
    "video_frame, then admin_command": (
        wrap("video_frame", pb.VideoFrame(sequence=1)) + wrap("admin_command", pb.AdminCommand()),
        None),
}


@pytest.mark.parametrize("case", list(FROM_AGENT))
async def test_t31_an_agents_malformed_bytes_never_reach_its_viewers(
        server: LiveServer, admin: Admin, case: str) -> None:
    agent, viewer, other = await live(server, admin)
    data, close_code = FROM_AGENT[case]
    await agent.ws.send(data)
    if close_code is None:
        await agent.send("heartbeat", pb.Heartbeat(timestamp=1))
        await agent.expect("heartbeat_ack")
    for peer in (viewer, other):
        kinds: list[Any] = []
        try:  # whatever arrives must parse (received_raw checks), and be no relayed message
            kinds = [pb.Message.FromString(d).WhichOneof("payload")
                     for d in await received_raw(peer, 4)]
        except ConnectionClosed:  # the session ended with the agent: its viewers were closed
            assert close_code is not None
        assert set(kinds) <= {"disconnect"}, kinds
    if close_code is not None:
        assert (await agent.closed())[0] == close_code


async def test_t31_a_video_frame_that_does_not_parse_is_lost_not_fatal_to_the_viewer(
        server: LiveServer, admin: Admin) -> None:
    """Video is relayed unparsed (the hot path), so the viewer itself must survive a frame
    whose inner bytes are garbage, as an attended agent's end user could send."""
    from remote_viewer.client import open_viewer

    agent = await Peer.agent(server, admin.keyed_machine()[1])
    session_id = await agent.accepted()
    async with open_viewer(server.base_url, admin.viewer_token(session_id)) as viewer:
        await agent.expect("start_stream", skip=frozenset({"heartbeat_ack", "quality_settings"}))
        await agent.ws.send(field(10, b"\xff\xff\xff\xff"))
        await agent.send("chat_message", CHAT)
        kind, message = await viewer.receive("chat_message")
        assert (kind, message.content) == ("chat_message", "hello")

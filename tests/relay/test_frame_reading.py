"""A message that comes as one whole frame is read without websockets' parser
(``one_binary_frame`` in ``web/wsprotocol.py``): exactly when the parser would read one
whole binary message out of those bytes, with the same payload; everything else is the
parser's, and reaches the relay as before."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from remote_server.observe.counters import RELAY
from remote_server.testing.liveserver import LiveServer
from remote_server.web.wsprotocol import one_binary_frame
from websockets.frames import Close, Frame, Opcode
from websockets.protocol import State
from websockets.server import ServerProtocol

from remote_core.protocol import pb, wrap

from .conftest import Admin
from .test_inline_answers import _frame, _watched

LIMIT = 70_000
SIZES = (0, 1, 125, 126, 127, 65_535, 65_536, LIMIT - 1, LIMIT, LIMIT + 1)


def _parsed(data: bytes, max_size: int) -> tuple[list[object], bool]:
    """What websockets' server side reads out of ``data``: its events, and whether it
    read all of it without an error."""
    server = ServerProtocol(state=State.OPEN, max_size=max_size)
    server.receive_data(data)
    events = server.events_received()
    return events, server.parser_exc is None and not server.reader.buffer


@st.composite
def _wire(draw: st.DrawFn) -> bytes:
    """A client's frame, whole or cut, with another after it, a reserved bit set or the
    mask left off; or bytes at random."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=300))
    noise = random.Random(draw(st.integers()))
    size = draw(st.sampled_from(SIZES) | st.integers(0, 300))
    opcode = draw(st.sampled_from([Opcode.BINARY, Opcode.BINARY, Opcode.BINARY, Opcode.TEXT,
                                   Opcode.CONT, Opcode.PING, Opcode.CLOSE]))
    if opcode is Opcode.CLOSE:
        frame = Frame(opcode, Close(1000, "bye").serialize())
    elif opcode is Opcode.PING:
        frame = Frame(opcode, noise.randbytes(min(size, 125)))
    else:
        payload = noise.randbytes(size)
        if opcode is Opcode.TEXT:
            payload = payload.hex()[:size].encode()
        frame = Frame(opcode, payload, fin=draw(st.booleans()))
    data = frame.serialize(mask=draw(st.integers(0, 9)) > 0, extensions=[])
    change = draw(st.sampled_from(["whole"] * 4 + ["cut", "two", "reserved", "garbage"]))
    if change == "cut":
        data = data[:draw(st.integers(0, len(data) - 1))]
    elif change == "two":
        data += Frame(Opcode.BINARY, b"next").serialize(mask=True, extensions=[])
    elif change == "reserved":
        data = bytes([data[0] | 0x40]) + data[1:]
    elif change == "garbage":
        data += bytes([draw(st.integers(0, 255))])
    return data


@settings(max_examples=400, deadline=None)
@given(_wire())
def test_a_frame_is_read_whole_exactly_when_the_parser_reads_one_whole_message(
        data: bytes) -> None:
    read = one_binary_frame(data, LIMIT)
    events, clean = _parsed(data, LIMIT)
    whole = (clean and len(events) == 1 and isinstance(events[0], Frame)
             and events[0].opcode is Opcode.BINARY and events[0].fin)
    assert (read is not None) == whole
    if whole:
        assert isinstance(events[0], Frame) and read == events[0].data


@pytest.mark.parametrize("size", SIZES)
def test_each_length_form_is_read_up_to_the_limit(size: int) -> None:
    payload = random.Random(size).randbytes(size)
    data = Frame(Opcode.BINARY, payload).serialize(mask=True, extensions=[])
    assert one_binary_frame(data, LIMIT) == (payload if size <= LIMIT else None)
    assert one_binary_frame(data, None) == payload


@contextmanager
def _parser_reads() -> Iterator[list[int]]:
    """How many times websockets' parser is fed, in this process (the live server's)."""
    fed: list[int] = []
    receive = ServerProtocol.receive_data

    def counted(self: ServerProtocol, data: bytes) -> None:
        fed.append(len(data))
        receive(self, data)

    ServerProtocol.receive_data = counted  # type: ignore[method-assign]
    try:
        yield fed
    finally:
        ServerProtocol.receive_data = receive  # type: ignore[method-assign]


pytestmark = pytest.mark.anyio


async def test_an_agents_frames_skip_the_parser_and_reach_the_viewer(
        server: LiveServer, admin: Admin) -> None:
    agent, viewer = await _watched(server, admin)
    with _parser_reads() as fed:
        before = RELAY.frames_inline
        for sequence in range(1, 6):
            await agent.send("video_frame", _frame(sequence))
            got = await viewer.expect("video_frame")
            assert (got.sequence, got.raw.data) == (sequence, bytes([sequence]) * 400)
            await anyio.sleep(0.05)
        assert RELAY.frames_inline - before == 5
    assert fed == []  # neither the agent's frames nor the viewer's acks took the parser


async def test_frames_cut_joined_or_in_fragments_take_the_parser_in_order(
        server: LiveServer, admin: Admin) -> None:
    agent, viewer = await _watched(server, admin)
    protocol, transport = agent.ws.protocol, agent.ws.transport
    written: list[bytes] = []

    def write(data: bytes) -> None:
        written.append(data)
        transport.write(data)

    with _parser_reads() as fed:
        # one message in three fragments, written at once
        message = wrap("video_frame", _frame(1))
        protocol.send_binary(message[:10], fin=False)
        protocol.send_continuation(message[10:20], fin=False)
        protocol.send_continuation(message[20:], fin=True)
        write(b"".join(protocol.data_to_send()))
        # a frame cut in two writes
        protocol.send_binary(wrap("video_frame", _frame(2)))
        cut = b"".join(protocol.data_to_send())
        write(cut[:7])
        await anyio.sleep(0.1)
        write(cut[7:])
        # two frames in one write
        protocol.send_binary(wrap("video_frame", _frame(3)))
        protocol.send_binary(wrap("video_frame", _frame(4)))
        write(b"".join(protocol.data_to_send()))
        for sequence in range(1, 5):
            got = await viewer.expect("video_frame")
            assert (got.sequence, got.raw.data) == (sequence, bytes([sequence]) * 400)
        assert sum(fed) == sum(map(len, written))  # every byte of them read by the parser
    await agent.send("heartbeat", pb.Heartbeat(timestamp=7))  # the socket reads on, whole
    assert (await agent.expect("heartbeat_ack")).client_timestamp == 7


async def test_a_whole_frame_inside_a_fragmented_message_is_still_a_protocol_error(
        server: LiveServer, admin: Admin) -> None:
    """A message may not begin before the last one's fragments end (RFC 6455 5.4): a
    whole frame that comes then is the parser's, which closes the socket with 1002."""
    agent, _ = await _watched(server, admin)
    protocol, transport = agent.ws.protocol, agent.ws.transport
    protocol.send_binary(wrap("video_frame", _frame(1))[:10], fin=False)
    transport.write(b"".join(protocol.data_to_send()))
    await anyio.sleep(0.1)
    transport.write(Frame(Opcode.BINARY, wrap("video_frame", _frame(2)))
                    .serialize(mask=True, extensions=[]))
    code, _ = await agent.closed()
    assert code == 1002


async def test_bytes_that_end_a_cut_frame_are_the_parsers_whatever_they_look_like(
        server: LiveServer, admin: Admin) -> None:
    """The rest of a frame is read as the rest, even when it looks like a whole frame of
    its own (here a frame whose payload is another frame's bytes, cut after its header)."""
    agent, _ = await _watched(server, admin)
    inner = Frame(Opcode.BINARY, wrap("video_frame", _frame(9))).serialize(
        mask=True, extensions=[])
    outer = Frame(Opcode.BINARY, inner).serialize(mask=True, extensions=[])
    header = len(outer) - len(inner)
    outer = outer[:header - 4] + bytes(4) + inner  # a zero mask key: the payload as sent
    with _parser_reads() as fed:
        agent.ws.transport.write(outer[:header])
        await anyio.sleep(0.1)
        agent.ws.transport.write(outer[header:])
        await anyio.sleep(0.2)
    assert fed[:2] == [header, len(inner)]  # then, maybe, the close it earned

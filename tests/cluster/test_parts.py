"""The cluster's sans-I/O parts: membership, the replica of the other nodes' sessions,
and the whole frames a forwarding node passes on."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from remote_server.cluster.frames import FrameTooLarge, WholeFrames, frame_size
from remote_server.cluster.members import Members
from remote_server.cluster.replica import Replica, from_wire, to_wire
from remote_server.relay.session import SessionSnapshot
from websockets.frames import Close, Frame, Opcode


def test_a_node_is_alive_for_its_lease_and_the_lowest_live_id_sweeps() -> None:
    members = Members("b", lease=10)
    assert members.heard("c", 10, now=0) is True
    assert members.heard("c", 10, now=5) is False
    assert members.heard("a", 10, now=1) is True
    assert members.alive() == {"a", "b", "c"} and members.sweeper() == "a"
    assert members.expired(now=11.5) == ["a"]  # a was last heard at 1, c at 5
    assert members.sweeper() == "b"
    assert members.left("c") is True and members.left("c") is False
    assert members.alive() == {"b"}


def _snapshot(session_id: str, agent_id: str, minutes: int) -> SessionSnapshot:
    return SessionSnapshot(session_id=session_id, agent_id=agent_id, consent_state="none",
                           is_managed=True, source="agentkey", technician_id=None,
                           created_at=datetime(2030, 1, 1, tzinfo=UTC) + timedelta(minutes=minutes),
                           viewer_count=0, organization="Acme")


def test_the_replica_finds_sessions_and_an_agents_newest_session() -> None:
    replica = Replica()
    old, new = _snapshot("s1", "agent", 0), _snapshot("s2", "agent", 5)
    replica.upsert("a", [old])
    replica.upsert("c", [new, _snapshot("s3", "other", 1)])
    assert replica.get("s1") == ("a", old)
    assert replica.for_agent("agent") == ("c", new)
    assert replica.drop("c") == [new, _snapshot("s3", "other", 1)]
    assert replica.for_agent("agent") == ("a", old) and replica.get("s3") is None
    replica.remove("a", ["s1"])
    assert replica.for_agent("agent") is None and replica.session_ids() == set()


def test_a_snapshot_survives_the_wire() -> None:
    snapshot = _snapshot("s1", "agent", 3)
    assert from_wire(to_wire(snapshot)) == snapshot


def _frames(data: bytes) -> list[bytes]:
    """``data`` cut into its frames; fails unless it ends at a frame's end."""
    frames, at = [], 0
    while at < len(data):
        size = frame_size(data, at)
        assert size is not None and at + size <= len(data), "a frame cut short"
        frames.append(data[at:at + size])
        at += size
    return frames


@pytest.mark.parametrize("chunks", ["bytes", "small", "large"])
def test_whole_frames_come_out_whatever_the_reads_and_stop_at_the_close(chunks: str) -> None:
    rng = random.Random(chunks)
    sizes = [0, 1, 125, 126, 127, 65535, 65536, 200_000, 3]
    sent = [Frame(Opcode.BINARY, rng.randbytes(n)).serialize(mask=False) for n in sizes]
    sent.insert(4, Frame(Opcode.PING, b"ping").serialize(mask=False))
    close = Frame(Opcode.CLOSE, Close(1003, "a reason").serialize()).serialize(mask=False)
    stream = b"".join(sent) + close + b"anything after the close"
    reads, at = [], 0
    while at < len(stream):
        step = {"bytes": 1, "small": rng.randint(1, 13), "large": rng.randint(1, 70_000)}[chunks]
        reads.append(stream[at:at + step])
        at += step
    cutter = WholeFrames(limit=1_000_000)
    passed = [bytes(cutter.feed(read)) for read in reads]
    assert [frame for out in passed for frame in _frames(out)] == sent
    assert cutter.close == (1003, "a reason")
    assert cutter.feed(sent[0]) == b""


def test_a_frame_over_the_limit_is_refused_even_read_a_byte_at_a_time() -> None:
    largest = Frame(Opcode.BINARY, bytes(70_000)).serialize(mask=False)
    assert bytes(WholeFrames(limit=70_000).feed(largest)) == largest  # the limit: payload
    header = bytes([0x82, 127]) + (70_100).to_bytes(8, "big")
    cutter = WholeFrames(limit=70_000)
    with pytest.raises(FrameTooLarge):
        for byte in header:
            cutter.feed(bytes([byte]))

"""The cluster's sans-I/O parts: the tunnel's wire format, membership, the replica."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from remote_server.cluster import frames
from remote_server.cluster.members import Members
from remote_server.cluster.replica import Replica, from_wire, to_wire
from remote_server.relay.session import SessionSnapshot


def test_a_message_larger_than_the_bus_takes_travels_in_chunks() -> None:
    payload = bytes(range(256)) * 40  # 10,240 bytes
    messages = frames.data(payload, 4096)
    assert [len(m) for m in messages] == [4097, 4097, 2049]
    reassembler = frames.Reassembler(limit=1 << 20)
    out = [reassembler.feed(m) for m in messages]
    assert out == [None, None, payload]
    assert reassembler.feed(frames.data(b"next", 4096)[0]) == b"next"


def test_the_other_message_types_round_trip() -> None:
    reassembler = frames.Reassembler(limit=100)
    assert reassembler.feed(frames.text("hello")) == "hello"
    assert reassembler.feed(frames.close(1008, "bye")) == frames.Close(1008, "bye")
    assert reassembler.feed(frames.credit(123_456_789)) == frames.Credit(123_456_789)


@pytest.mark.parametrize("message", [b"", b"\x09", b"\x03x", b"\x04short"])
def test_a_broken_tunnel_message_is_an_error(message: bytes) -> None:
    with pytest.raises(ValueError):
        frames.Reassembler(limit=100).feed(message)


def test_a_chunked_message_past_the_size_limit_is_refused_before_it_is_whole() -> None:
    reassembler = frames.Reassembler(limit=5000)
    messages = frames.data(b"x" * 9000, 4096)
    assert reassembler.feed(messages[0]) is None
    with pytest.raises(ValueError, match="over 5000 bytes"):
        reassembler.feed(messages[1])


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

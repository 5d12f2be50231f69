"""Which sessions are recorded, and what their end users are told, over real sockets.

A server that records nothing by default, with a policy that records one tag's machines
with a notice: such a machine's session panel shows (even managed) and hears while a
recording runs; another machine's session is not recorded at all. With keystrokes kept as
timing only, a recorded key event says when a key went down, never which.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from remote_server.recording_policy import RecordingPolicy, Retention
from remote_server.testing.liveserver import LiveServer, eventually, live_server

from remote_core.errors import ConfigError
from remote_core.protocol import pb
from remote_core.recording import read_segment

from .conftest import Admin, Peer, relay_settings

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def policed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, Path]]:
    path = tmp_path_factory.mktemp("recording-policy")
    folder = path / "recordings"
    with live_server(relay_settings(
            path, recordings="off", recording_policy=("tag:audited=notice",),
            recording_keystrokes="timing", recordings_url=f"file://{folder}")) as live:
        yield live, folder


def machine(admin: Admin, *tags: str) -> str:
    """A managed machine with ``tags`` and a key for it; returns the key."""
    agent_id = admin.ok("POST", "/api/machines", 201,
                        json={"organization": "acme", "tags": list(tags)})["agent_id"]
    return admin.key(agent_id)[1]


async def test_a_policy_records_a_tagged_machine_with_a_notice_and_keeps_keystroke_timing(
        policed: tuple[LiveServer, Path]) -> None:
    server, folder = policed
    admin = Admin(server)
    agent = await Peer.agent(server, machine(admin, "audited"))
    session_id = await agent.accepted()
    viewer = await Peer.viewer(server, admin.viewer_token(session_id))
    await viewer.accepted()
    # a managed machine shows its panel under "notice", and hears the recording run
    told = await agent.expect("participants")
    assert [p.name for p in told.participants] == [admin.username]
    assert (await agent.expect("start_stream")).session_panel is True
    while not told.recording:
        told = await agent.expect("participants")
    await viewer.send("key_event", pb.KeyEvent(down=True, key_type=pb.KEY_UNICODE, unicode="p",
                                               vk_code=80, modifiers=pb.Modifiers(ctrl=True)))
    assert (await agent.expect("key_event")).unicode == "p"  # the agent gets the key itself
    await viewer.close()
    await agent.expect("stop_stream")
    while told.recording:  # it stopped with the last technician
        told = await agent.expect("participants")
    await eventually(lambda: "recording.finished" in admin.events(session_id), 10)

    [recording] = admin.ok("GET", "/api/recordings", params={"session_id": session_id})
    keys = []
    for path in sorted((folder / recording["id"]).glob("*.seg")):
        for _, data in read_segment(path.read_bytes()).records:
            message = pb.Message()
            message.ParseFromString(data)
            if message.WhichOneof("payload") == "key_event":
                keys.append(message.key_event)
    assert keys == [pb.KeyEvent(down=True)]  # when, never which


async def test_a_machine_the_policy_leaves_out_is_not_recorded(
        policed: tuple[LiveServer, Path]) -> None:
    server, _ = policed
    admin = Admin(server)
    agent = await Peer.agent(server, machine(admin, "ordinary"))
    session_id = await agent.accepted()
    viewer = await Peer.viewer(server, admin.viewer_token(session_id))
    await viewer.accepted()
    assert (await agent.expect("start_stream")).session_panel is False  # the shipped policy
    await viewer.close()
    await agent.expect("stop_stream")
    assert admin.ok("GET", "/api/recordings", params={"session_id": session_id}) == []
    assert "recording.started" not in admin.events(session_id)


def test_the_most_specific_entry_wins() -> None:
    policy = RecordingPolicy.parse("on", ["organization:acme=off", "tag:finance=notice",
                                          "tag:lab=off", "machine:m1=off", "tenant:t-2=notice",
                                          "tenant:t-3=off"])
    mode = policy.mode
    assert mode(agent_id="m0", organization="other", tags=()) == "on"
    # a tenant's entry refines the setting; its organizations', tags' and machines' win
    assert mode(agent_id="m0", organization="other", tags=(), tenant_id="t-2") == "notice"
    assert mode(agent_id="m0", organization="other", tags=(), tenant_id="t-3") == "off"
    assert mode(agent_id="m0", organization="acme", tags=(), tenant_id="t-2") == "off"
    assert mode(agent_id="m0", organization="x", tags=("finance",), tenant_id="t-3") == "notice"
    assert mode(agent_id="m0", organization="acme", tags=()) == "off"
    assert mode(agent_id="m0", organization="acme", tags=("lab",)) == "off"
    assert mode(agent_id="m0", organization="acme", tags=("lab", "finance")) == "notice"
    assert mode(agent_id="m1", organization="other", tags=("finance",)) == "off"
    assert policy.records_any
    assert not RecordingPolicy.parse("off", ["tag:lab=off"]).records_any


@pytest.mark.parametrize(("default", "entries", "said"), [
    ("always", [], "'recordings' must be off, on or notice, got 'always'"),
    ("off", ["finance=on"], "'recording_policy': expected organization:NAME=VALUE"),
    ("off", ["site:x=on"], "expected organization:NAME=VALUE"),
    ("off", ["tag:x=loud"], "(VALUE off, on or notice), got 'tag:x=loud'"),
    ("off", ["tag:=on"], "expected organization:NAME=VALUE"),
    ("off", ["tag:x=on", "tag:x=off"], "tag 'x' is given two values, on and off"),
])
def test_a_policy_that_is_not_one_is_refused_clearly(default: str, entries: list[str],
                                                      said: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(said)):
        RecordingPolicy.parse(default, entries)


def test_the_longest_retention_of_a_machines_tags_wins() -> None:
    retention = Retention.parse(30, ["organization:acme=7", "tag:legal=0", "tag:lab=1",
                                     "tag:finance=365", "machine:m1=2"])
    days = retention.days
    assert days(agent_id="m0", organization="other", tags=()) == 30
    assert days(agent_id="m0", organization="acme", tags=()) == 7
    assert days(agent_id="m0", organization="acme", tags=("lab", "finance")) == 365
    assert days(agent_id="m0", organization="acme", tags=("finance", "legal")) == 0  # for good
    assert days(agent_id="m1", organization="acme", tags=("legal",)) == 2
    assert retention.shortest == 1
    assert Retention.parse(0, ["tag:legal=0"]).shortest == 0  # nothing is ever purged
    per_tenant = Retention.parse(30, ["tenant:t-2=90", "organization:acme=7"])
    assert per_tenant.days(agent_id="m0", organization="x", tags=(), tenant_id="t-2") == 90
    assert per_tenant.days(agent_id="m0", organization="acme", tags=(), tenant_id="t-2") == 7
    assert per_tenant.days(agent_id="m0", organization="x", tags=()) == 30
    with pytest.raises(ConfigError, match=r"\(VALUE days, 0 keeping them\), got 'tag:x=-1'"):
        Retention.parse(0, ["tag:x=-1"])
    with pytest.raises(ConfigError, match="'recordings_keep_days' must be 0"):
        Retention.parse(-1, [])

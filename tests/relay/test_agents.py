"""Agent authentication and identity over real sockets (SPEC 5.2, 5.4; CONTRACT 1, 5)."""

from __future__ import annotations

import uuid

import pytest
from remote_server.testing.liveserver import eventually

from remote_core.protocol import pb

from .conftest import SHARED_KEY, Admin, Peer

pytestmark = pytest.mark.anyio


async def refused(peer: Peer) -> str:
    response = await peer.response()
    assert not response.success and not response.session_id
    code, _ = await peer.closed()
    assert code == 1008
    return str(response.error)


async def test_keyed_agent_is_its_keys_machine_and_its_claimed_uid_is_dropped(
        server, admin: Admin) -> None:
    agent_id, key = admin.keyed_machine()
    agent = await Peer.agent(server, key, agent_id="someone-else",
                             headers={"X-Machine-UID": "uid-claimed-by-keyed"})
    session_id = await agent.accepted()
    machine = admin.ok("GET", f"/api/machines/{agent_id}")
    assert machine["status"] == "online" and machine["session_id"] == session_id
    assert machine["machine_uid"] is None and machine["agent_version"] == "1.2.3"
    session = admin.ok("GET", f"/api/sessions/{session_id}")
    assert session["consent_state"] == "not_required"
    assert server.ctx.registry.agent_for_uid("uid-claimed-by-keyed") is None
    await agent.send("heartbeat", pb.Heartbeat(timestamp=1234))
    ack = await agent.expect("heartbeat_ack")  # no consent_request came first
    assert ack.client_timestamp == 1234 and ack.server_timestamp > 0
    await agent.close()
    await eventually(lambda: admin.ok("GET", f"/api/machines/{agent_id}")["status"] == "offline")


async def test_wrong_key_is_refused(server, admin: Admin) -> None:
    agent = await Peer.agent(server, "cak_" + "A" * 43)
    assert await refused(agent) == "unknown or revoked agent key"


async def test_revoked_key_is_refused_and_its_live_socket_closed(server, admin: Admin) -> None:
    agent_id = admin.machine()
    key_id, key = admin.key(agent_id)
    agent = await Peer.agent(server, key)
    await agent.accepted()
    admin.ok("DELETE", f"/api/machines/{agent_id}/keys/{key_id}", 204)
    disconnect = await agent.expect("disconnect")
    assert disconnect.reason == "agent key revoked"
    assert (await agent.closed())[0] == 1000
    again = await Peer.agent(server, key)
    assert await refused(again) == "unknown or revoked agent key"


async def test_user_jwt_is_never_an_agent_credential(server, admin: Admin) -> None:
    agent = await Peer.agent(server, admin.token)
    assert await refused(agent) == "a user token is not an agent credential"
    viewer_token = admin.viewer_token(await (await Peer.agent(
        server, admin.keyed_machine()[1])).accepted())
    agent = await Peer.agent(server, viewer_token)
    assert await refused(agent) == "a user token is not an agent credential"


async def test_unrecognised_credential_is_refused(server, admin: Admin) -> None:
    assert await refused(await Peer.agent(server, "hello")) == "unrecognised agent credential"
    assert "required" in await refused(await Peer.agent(server, ""))


async def test_shared_key_admits_and_dedups_on_machine_uid(server, admin: Admin) -> None:
    uid = f"uid-{uuid.uuid4()}"
    first = await Peer.agent(server, SHARED_KEY, agent_id="shared-a",
                             headers={"X-Machine-UID": uid})
    session_id = await first.accepted()
    assert admin.ok("GET", f"/api/sessions/{session_id}")["agent_id"] == "shared-a"
    await first.close()
    # The same machine reinstalled under a new agent_id reattaches through the uid index.
    second = await Peer.agent(server, SHARED_KEY, agent_id="shared-b",
                              headers={"X-Machine-UID": uid})
    session_id = await second.accepted()
    assert admin.ok("GET", f"/api/sessions/{session_id}")["agent_id"] == "shared-a"
    assert admin.ok("GET", "/api/machines/shared-a")["machine_uid"] == uid
    # Every removal path purges the uid index.
    admin.ok("DELETE", "/api/machines/shared-a", 200, params={"purge": "true"})
    assert (await second.closed())[0] == 1000
    assert server.ctx.registry.agent_for_uid(uid) is None


async def test_a_reconnecting_agent_replaces_its_old_socket(server, admin: Admin) -> None:
    agent_id, key = admin.keyed_machine()
    old = await Peer.agent(server, key)
    await old.accepted()
    new = await Peer.agent(server, key)
    session_id = await new.accepted()
    assert (await old.expect("disconnect")).reason == "replaced by a new connection of this agent"
    assert admin.ok("GET", f"/api/machines/{agent_id}")["session_id"] == session_id
    assert admin.ok("GET", f"/api/machines/{agent_id}")["status"] == "online"


async def test_agent_status_updates_the_machine_and_update_status_is_recorded(
        server, admin: Admin) -> None:
    agent_id, key = admin.keyed_machine()
    agent = await Peer.agent(server, key)
    session_id = await agent.accepted()
    await agent.send("agent_status", pb.AgentStatus(
        hostname="pc-17", os_version="Debian 13", is_elevated=True, agent_version="1.2.4",
        organization="globex", site="berlin", tags=["kiosk", "floor-2"]))
    await agent.send("update_status", pb.UpdateStatus(
        current_version="1.2.4", state=pb.UPDATE_FAILED, error_message="checksum mismatch"))
    await agent.send("heartbeat", pb.Heartbeat(timestamp=1))
    await agent.expect("heartbeat_ack")  # both were handled before the heartbeat
    machine = admin.ok("GET", f"/api/machines/{agent_id}")
    assert (machine["hostname"], machine["os_version"], machine["is_elevated"]) == (
        "pc-17", "Debian 13", True)
    # The operator placed it in "acme": that stays; what the operator left empty is filled.
    assert (machine["agent_version"], machine["organization"], machine["site"],
            machine["tags"]) == ("1.2.4", "acme", "berlin", ["kiosk", "floor-2"])
    assert "agent.update_status" in admin.events(session_id)
    assert "machine.placement_reported" in admin.events(session_id)


async def test_a_status_report_that_places_nothing_costs_no_read_of_the_machine(
        server, admin: Admin, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every admission is followed by the agent's first report: the stored machine is read
    only to audit the placement a report fills in (or to keep a removed machine removed)."""
    agent_id, key = admin.keyed_machine()
    agent = await Peer.agent(server, key)
    await agent.accepted()
    store = server.ctx.registry.store
    reads: list[str] = []
    read = store.get_machine

    async def counted(machine_id: str, *args: object, **kwargs: object) -> object:
        reads.append(machine_id)
        return await read(machine_id, *args, **kwargs)

    monkeypatch.setattr(store, "get_machine", counted)
    for placement in ({}, {"site": "berlin"}):
        await agent.send("agent_status", pb.AgentStatus(hostname="pc-18", **placement))
        await agent.send("heartbeat", pb.Heartbeat(timestamp=1))
        await agent.expect("heartbeat_ack")
    assert reads == [agent_id]  # the second report's: it fills the site in
    machine = admin.ok("GET", f"/api/machines/{agent_id}")
    assert (machine["hostname"], machine["site"]) == ("pc-18", "berlin")


async def test_a_keyed_agent_cannot_move_its_machine_to_another_organization(
        server, admin: Admin) -> None:
    """Finding 3: an AgentStatus used to overwrite the operator's placement at every report,
    so one compromised endpoint could put itself in another organization's list."""
    agent_id, key = admin.keyed_machine()  # pre-registered in "acme"
    agent = await Peer.agent(server, key)
    session_id = await agent.accepted()

    async def report(**placement: object) -> None:
        await agent.send("agent_status", pb.AgentStatus(hostname="pc", **placement))
        await agent.send("heartbeat", pb.Heartbeat(timestamp=1))
        await agent.expect("heartbeat_ack")

    await report(organization="victim-corp", site="hq", tags=["finance"])
    machine = admin.ok("GET", f"/api/machines/{agent_id}")
    assert machine["organization"] == "acme"
    # The operator's correction sticks through the agent's next reports.
    admin.ok("PATCH", f"/api/machines/{agent_id}", json={"site": "lab", "tags": ["qa"]})
    await report(organization="victim-corp", site="hq", tags=["finance"])
    machine = admin.ok("GET", f"/api/machines/{agent_id}")
    assert (machine["organization"], machine["site"], machine["tags"]) == ("acme", "lab", ["qa"])
    assert admin.ok("GET", f"/api/sessions/{session_id}")["agent_id"] == agent_id


async def test_agent_reported_text_follows_the_stores_one_rule(server, admin: Admin,
                                                               caplog) -> None:
    """Finding 6: control characters and NUL in an AgentStatus were stored (SQLite) or broke
    the upsert (PostgreSQL); now such a field is ignored, the rest is stored."""
    agent_id, key = admin.keyed_machine()
    agent = await Peer.agent(server, key)
    await agent.accepted()
    await agent.send("agent_status", pb.AgentStatus(
        hostname="evil\x00host", os_version="Debian\n13\x1b[2J", agent_version="1.2.5",
        site="s" * 201, tags=["ok", "bad\ttag"]))
    await agent.send("heartbeat", pb.Heartbeat(timestamp=1))
    await agent.expect("heartbeat_ack")
    machine = admin.ok("GET", f"/api/machines/{agent_id}")
    assert machine["agent_version"] == "1.2.5"  # the good field of the same report is kept
    assert machine["hostname"] in ("", None) and machine["os_version"] in ("", None)
    assert machine["site"] == "" and machine["tags"] == []
    assert "breaking the text rule" in caplog.text


async def test_admin_command_reaches_the_agent(server, admin: Admin) -> None:
    agent_id, key = admin.keyed_machine()
    agent = await Peer.agent(server, key)
    await agent.accepted()
    admin.ok("DELETE", f"/api/machines/{agent_id}", 200, params={"uninstall": "true"})
    command = await agent.expect("admin_command")
    assert command.command == pb.ADMIN_UNINSTALL
    assert (await agent.closed())[0] == 1000


async def test_an_agent_cannot_open_its_session_as_file_transfer(server, admin: Admin) -> None:
    agent = await Peer.agent(server, admin.keyed_machine()[1], session_type=pb.FILE_TRANSFER)
    assert "FILE_TRANSFER is a viewer's session type" in await refused(agent)


async def test_an_agent_cannot_open_its_session_as_backstage(server, admin: Admin) -> None:
    agent = await Peer.agent(server, admin.keyed_machine()[1], session_type=pb.BACKSTAGE)
    assert "BACKSTAGE is a viewer's session type" in await refused(agent)


async def test_session_events_reach_the_audit_log(server, admin: Admin) -> None:
    agent = await Peer.agent(server, admin.keyed_machine()[1])
    session_id = await agent.accepted()
    viewer = await Peer.viewer(server, admin.viewer_token(session_id))
    await viewer.accepted()
    await viewer.close()
    await agent.expect("start_stream")
    await agent.expect("stop_stream")
    await agent.close()
    kinds = await eventually(lambda: "session.closed" in (k := admin.events(session_id)) and k)
    assert {"session.opened", "viewer.joined", "viewer.left"} <= set(kinds)


async def test_a_keyed_machine_is_reached_only_with_its_key(server, admin: Admin) -> None:
    uid = f"uid-{uuid.uuid4()}"
    first = await Peer.agent(server, SHARED_KEY, agent_id="later-keyed",
                             headers={"X-Machine-UID": uid})
    await first.accepted()
    await first.close()
    admin.key("later-keyed")
    # Its agent_id is no longer claimable without the key ...
    impostor = await Peer.agent(server, admin.code(), agent_id="later-keyed")
    assert await refused(impostor) == "this machine has an agent key; it must connect with that key"
    # ... and its uid is no alias: the claimant gets a machine of its own.
    other = await Peer.agent(server, SHARED_KEY, agent_id="uid-claimant",
                             headers={"X-Machine-UID": uid})
    session_id = await other.accepted()
    assert admin.ok("GET", f"/api/sessions/{session_id}")["agent_id"] == "uid-claimant"
    assert admin.ok("GET", "/api/machines/later-keyed")["machine_uid"] == uid
    assert admin.ok("GET", "/api/machines/uid-claimant")["machine_uid"] is None


async def test_a_purged_keyed_machine_stays_out_its_key_is_revoked(server,
                                                                    admin: Admin) -> None:
    """Purging is what an operator does with a machine taken as compromised: its key dies
    with it, so the agent cannot bring the machine back at its next reconnect."""
    agent_id, key = admin.keyed_machine()
    agent = await Peer.agent(server, key)
    await agent.accepted()
    admin.ok("DELETE", f"/api/machines/{agent_id}", 200, params={"purge": "true"})
    assert (await agent.expect("disconnect")).reason == "removed by an administrator"
    admin.ok("GET", f"/api/machines/{agent_id}", 404)  # soft-deleted: out of every list
    again = await Peer.agent(server, key)
    assert await refused(again) == "unknown or revoked agent key"
    admin.ok("GET", f"/api/machines/{agent_id}", 404)

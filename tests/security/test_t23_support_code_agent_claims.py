"""T23: an attended (support-code) agent that claims another machine's ``machine_uid``.

An attended agent is run by whoever has the code, and ``X-Machine-UID`` is
whatever it says. SPEC 5.4 makes the uid the key of deduplication for agents
without a key, support-code agents included; what must hold is that a keyed
machine is never reached that way, and that a reattachment to an unkeyed
machine is visible in the audit log (Yuzu #414; Remotely #714).
"""

from __future__ import annotations

import uuid

import pytest
from remote_server.testing.liveserver import LiveServer, eventually

from remote_core.protocol import pb

from .conftest import SHARED_KEY, Admin, Peer

pytestmark = pytest.mark.anyio


async def attended_claiming(server: LiveServer, admin: Admin, uid: str) -> tuple[Peer, str]:
    agent = await Peer.agent(server, admin.code(), agent_id=f"attended-{uuid.uuid4().hex[:6]}",
                             headers={"X-Machine-UID": uid})
    session_id = await agent.accepted()
    await agent.expect("consent_request")
    return agent, session_id


async def test_t23_a_keyed_machines_uid_reaches_nothing(server: LiveServer,
                                                        admin: Admin) -> None:
    uid = f"uid-{uuid.uuid4()}"
    agent_id = f"keyed-{uuid.uuid4().hex[:6]}"
    first = await Peer.agent(server, SHARED_KEY, agent_id=agent_id,
                             headers={"X-Machine-UID": uid})
    await first.accepted()
    await first.close()
    key = admin.key(agent_id)[1]
    keyed = await Peer.agent(server, key)
    keyed_session = await keyed.accepted()
    _claimant, session_id = await attended_claiming(server, admin, uid)
    claimed = admin.ok("GET", f"/api/sessions/{session_id}")["agent_id"]
    assert claimed != agent_id, "the attended agent reached the keyed machine"
    assert admin.ok("GET", f"/api/machines/{claimed}")["machine_uid"] is None
    # The keyed machine keeps its live session, its uid and its operator's placement.
    await keyed.send("heartbeat", pb.Heartbeat(timestamp=1))
    assert (await keyed.expect("heartbeat_ack")).client_timestamp == 1
    machine = admin.ok("GET", f"/api/machines/{agent_id}")
    assert (machine["session_id"], machine["machine_uid"]) == (keyed_session, uid)


async def test_t23_reattaching_to_an_unkeyed_machine_is_audited(server: LiveServer,
                                                                admin: Admin) -> None:
    uid = f"uid-{uuid.uuid4()}"
    agent_id = f"shared-{uuid.uuid4().hex[:6]}"
    managed = await Peer.agent(server, SHARED_KEY, agent_id=agent_id,
                               headers={"X-Machine-UID": uid})
    old_session = await managed.accepted()
    _claimant, session_id = await attended_claiming(server, admin, uid)
    # SPEC 5.4: the uid decides which machine this is; the managed agent is replaced ...
    assert admin.ok("GET", f"/api/sessions/{session_id}")["agent_id"] == agent_id
    assert (await managed.expect("disconnect")).reason == (
        "replaced by a new connection of this agent")
    # ... and the log says who took the machine over, and how.
    opened = await eventually(lambda: [e for e in admin.ok(
        "GET", "/api/events", params={"session_id": session_id})
        if e["kind"] == "session.opened"])
    assert opened[0]["agent_id"] == agent_id and opened[0]["detail"]["source"] == "supportcode"
    closed = await eventually(lambda: [e for e in admin.ok(
        "GET", "/api/events", params={"session_id": old_session})
        if e["kind"] == "session.closed"])
    assert closed[0]["detail"]["reason"] == "replaced by a new connection of this agent"
    # Nothing of the machine is shown before the end user consents.
    admin.ok("POST", f"/api/sessions/{session_id}/viewer-token", 409)

"""The relay end to end on PostgreSQL, the production database (same peers, same sockets)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from remote_server.testing.liveserver import LiveServer, live_server
from remote_store_sql.testing import postgres_database

from remote_core.protocol import pb

from .conftest import Admin, Peer, relay_settings

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


@pytest.fixture(scope="module")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with postgres_database("relay_e2e") as database:
        settings = relay_settings(tmp_path_factory.mktemp("pg"), database_url=database.url)
        with live_server(settings) as live:
            yield live


async def test_keyed_agent_status_and_viewer_on_postgres(pg_server: LiveServer) -> None:
    admin = Admin(pg_server)
    agent_id, key = admin.keyed_machine()
    agent = await Peer.agent(pg_server, key, headers={"X-Machine-UID": "ignored-uid"})
    session_id = await agent.accepted()
    await agent.send("agent_status", pb.AgentStatus(hostname="pg-host", tags=["a", "b"]))
    viewer = await Peer.viewer(pg_server, admin.viewer_token(session_id))
    await viewer.accepted()
    await agent.expect("start_stream")
    await agent.send("video_frame", pb.VideoFrame(sequence=5, raw=pb.RawFrame(is_keyframe=True)))
    assert (await viewer.expect("video_frame")).sequence == 5
    machine = admin.ok("GET", f"/api/machines/{agent_id}")
    assert (machine["hostname"], machine["tags"], machine["machine_uid"]) == (
        "pg-host", ["a", "b"], None)


async def test_support_code_consent_and_single_use_on_postgres(pg_server: LiveServer) -> None:
    admin = Admin(pg_server)
    code = admin.code()
    agent = await Peer.agent(pg_server, code, headers={"X-Machine-UID": "pg-uid-1"})
    session_id = await agent.accepted()
    assert (await agent.expect("consent_request")).technician_name == "admin"
    second = await Peer.agent(pg_server, code)
    assert (await second.response()).error == "support code already used"
    await agent.send("consent_response", pb.ConsentResponse(session_id=session_id, granted=True))
    await agent.send("heartbeat", pb.Heartbeat(timestamp=1))
    await agent.expect("heartbeat_ack")
    assert admin.ok("GET", f"/api/sessions/{session_id}")["consent_state"] == "granted"
    assert pg_server.ctx.registry.agent_for_uid("pg-uid-1") is not None


async def test_a_nul_in_agent_status_does_not_lose_the_status_on_postgres(
        pg_server: LiveServer) -> None:
    """PostgreSQL refuses NUL in text: the one text rule keeps it from the upsert, so the
    rest of the report is stored instead of the whole status failing."""
    admin = Admin(pg_server)
    agent_id, key = admin.keyed_machine()
    agent = await Peer.agent(pg_server, key)
    await agent.accepted()
    await agent.send("agent_status", pb.AgentStatus(hostname="nul\x00host", agent_version="2.0.1",
                                                    os_version="Debian 13"))
    await agent.send("heartbeat", pb.Heartbeat(timestamp=1))
    await agent.expect("heartbeat_ack")
    machine = admin.ok("GET", f"/api/machines/{agent_id}")
    assert (machine["agent_version"], machine["os_version"]) == ("2.0.1", "Debian 13")
    assert "\x00" not in str(machine)

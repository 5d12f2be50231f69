"""Graceful shutdown: every peer hears why, and a restarted server takes its agents back."""

from __future__ import annotations

import anyio
import pytest
from remote_server.testing.liveserver import LiveServer, live_server

from .conftest import Admin, Peer, relay_settings

pytestmark = pytest.mark.anyio


@pytest.mark.slow
async def test_peers_get_a_reason_and_agents_reattach_after_restart(tmp_path) -> None:
    settings = relay_settings(tmp_path)
    live = LiveServer(settings)
    live.start()
    admin = Admin(live)
    agent_id, key = admin.keyed_machine()
    agent = await Peer.agent(live, key)
    session_id = await agent.accepted()
    viewer = await Peer.viewer(live, admin.viewer_token(session_id))
    await viewer.accepted()
    # Stop from a worker thread: the peers in this loop must answer the closing handshake.
    await anyio.to_thread.run_sync(live.stop)
    for peer in (agent, viewer):
        assert (await peer.expect("disconnect", skip=frozenset({"start_stream"}))).reason == (
            "server shutting down")
        assert (await peer.closed())[0] == 1001
    with live_server(settings) as live:
        admin = Admin(live)
        assert admin.ok("GET", f"/api/machines/{agent_id}")["status"] == "offline"
        again = await Peer.agent(live, key)
        await again.accepted()
        machine = admin.ok("GET", f"/api/machines/{agent_id}")
        assert machine["status"] == "online"
        assert [m["agent_id"] for m in admin.ok("GET", "/api/machines")] == [agent_id]

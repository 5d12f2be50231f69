"""A node dies or drains behind HAProxy: its agents come back through the others."""

from __future__ import annotations

import signal

import anyio
import httpx
import pytest
from remote_server.testing.liveserver import eventually
from remote_server.testing.processes import BIN, AgentProcess
from remote_viewer.client import open_viewer

pytestmark = [pytest.mark.xvfb, pytest.mark.postgres, pytest.mark.slow, pytest.mark.anyio]


@pytest.fixture
def balanced(cluster):
    balancer = cluster.load_balancer().start()
    yield cluster, balancer
    balancer.stop()


@pytest.fixture
def agent(tmp_path, x_display, balanced):
    cluster, balancer = balanced
    agent_id, key = cluster.api("a").machine_with_key(organization="Acme")
    process = AgentProcess(tmp_path / "agent", x_display.display, "--server", balancer.url,
                           "--key", key)
    try:
        session = cluster.api("a").live_session(agent_id)
        yield agent_id, session, process
    finally:
        process.stop()


def _survivor(cluster, gone: str):
    return cluster.api(next(n for n in "abc" if n != gone))


def _live_elsewhere(api, agent_id: str, old_session: str):
    sessions = api.get("/api/sessions").json()
    return next((s for s in sessions if s["agent_id"] == agent_id and s["live"]
                 and s["id"] != old_session), None)


async def test_a_killed_nodes_agents_come_back_and_its_sessions_are_closed(agent, balanced):
    cluster, _ = balanced
    agent_id, session, _ = agent
    holder = cluster.holder(agent_id)
    cluster.nodes[holder].kill()
    api = _survivor(cluster, holder)
    again = await eventually(lambda: _live_elsewhere(api, agent_id, session["id"]), 30,
                             "the agent online again through another node")
    assert cluster.holder(agent_id) != holder
    assert api.machine(agent_id)["status"] == "online"

    def closed():
        record = api.get(f"/api/sessions/{session['id']}").json()
        return record if record["ended_at"] is not None else None

    record = await eventually(closed, 30, "the dead node's session closed once its lease ran out")
    assert f"its server node {holder} stopped answering" in record["end_reason"]
    assert again["live"]


def test_a_node_killed_but_not_yet_marked_down_refuses_no_one(balanced):
    """The seconds before the health checks see a killed node, HAProxy still counts it
    up, and leastconn favours it (it holds no sockets now): a refused connection goes to
    another node, so reconnecting agents are not turned away there in a herd."""
    cluster, balancer = balanced
    cluster.nodes["c"].kill()
    answers = [httpx.get(f"{balancer.url}/readyz", timeout=5).status_code for _ in range(6)]
    assert answers == [200] * 6


@pytest.mark.parametrize("how", ["SIGTERM", "remote-support drain"])
async def test_a_draining_node_hands_its_agents_to_the_others(agent, balanced, how):
    cluster, _ = balanced
    agent_id, session, _ = agent
    holder = cluster.holder(agent_id)
    node = cluster.nodes[holder]
    if how == "SIGTERM":
        node.stop()  # as a rolling upgrade stops a node
    else:
        done = await anyio.run_process([str(BIN / "remote-support"), "drain", holder],
                                       env=node.env, check=False)
        assert done.returncode == 0, done.stderr.decode()
        assert f"node {holder} is draining: its 1 session(s)" in done.stdout.decode()
        # It stops as SIGTERM stops it (uvicorn exits by the signal once shut down).
        assert node.process is not None and node.process.wait(15) in (0, -signal.SIGTERM)
    api = _survivor(cluster, holder)
    record = api.get(f"/api/sessions/{session['id']}").json()
    assert record["end_reason"] == "server shutting down"
    await eventually(lambda: _live_elsewhere(api, agent_id, session["id"]), 15,
                     "the agent online again through another node")


async def test_a_viewer_naming_its_sessions_node_is_sent_straight_there(agent, balanced):
    """The viewer token's answer names the node holding the session; a socket to the
    balancer that names it reaches that node itself (never forwarded node to node),
    whichever node minted the token."""
    cluster, balancer = balanced
    agent_id, session, _ = agent
    holder = cluster.holder(agent_id)
    for minted_by in "abc":
        granted = cluster.api(minted_by).post(
            f"/api/sessions/{session['id']}/viewer-token").json()
        assert granted["node"] == holder
        async with open_viewer(balancer.url, granted["token"], node=granted["node"]) as viewer:
            await viewer.next_frame(15)
    forwarded = [name for name, process in cluster.nodes.items()
                 if "forwarded to node" in process.log.read_text()]
    assert forwarded == []

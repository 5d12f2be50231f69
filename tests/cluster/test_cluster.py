"""Any viewer, any node: an agent held by one node, viewers and operators on the others."""

# Polling the X server for the pointer is the point of one test:
# ruff: noqa: ASYNC110

from __future__ import annotations

import anyio
import httpx
import numpy as np
import pytest
from remote_server.testing.liveserver import eventually
from remote_server.testing.processes import AgentProcess
from remote_viewer.client import open_viewer

from remote_core.errors import SessionRefused
from remote_core.protocol import pb
from remote_core.testing.xvfb import blank_painter, pointer_location
from remote_core.wsclient import ConnectionClosed

pytestmark = [pytest.mark.xvfb, pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture
def painter(x_display):
    with blank_painter(x_display.display) as p:
        yield p


@pytest.fixture
def agent_on_a(tmp_path, x_display, cluster):
    """A managed agent connected to node a (its key issued through node c)."""
    agent_id, key = cluster.api("c").machine_with_key(organization="Acme")
    agent = AgentProcess(tmp_path / "agent", x_display.display, "--server",
                         cluster.nodes["a"].url, "--key", key)
    try:
        session = cluster.api("b").live_session(agent_id)  # node b sees a's session
        yield agent_id, session, agent
    finally:
        agent.stop()


@pytest.mark.anyio
async def test_a_viewer_on_another_node_gets_exact_pixels_and_moves_the_pointer(
        agent_on_a, painter, cluster, x_display):
    agent_id, session, _ = agent_on_a
    b = cluster.api("b")
    for node in "abc":
        machine = cluster.api(node).machine(agent_id)
        assert machine is not None and machine["status"] == "online", node
    pattern = np.random.default_rng(3).integers(0, 256, (64, 96, 4), dtype=np.uint8)
    async with open_viewer(cluster.nodes["b"].url, b.viewer_token(session["id"]),
                           codec=pb.CODEC_RAW) as viewer:
        first = await viewer.next_frame(15)
        while first.codec != "raw":
            first = await viewer.next_frame(15, after=first.sequence)
        painter.put_bgra(100, 200, 96, 64, pattern.tobytes())
        painter.sync()
        await viewer.wait_for_image(
            lambda image: np.array_equal(image[200:264, 100:196, :3], pattern[:, :, :3]), 10)
        await viewer.move(321, 123)
        with anyio.fail_after(5):
            while await pointer_location(x_display.env()) != (321, 123):
                await anyio.sleep(0.05)
        listed = {s["id"]: s for s in cluster.api("c").get("/api/sessions").json()}
        assert listed[session["id"]]["live"]
        # A whole screen of noise (frames of up to 1.9 MB) crosses the nodes exact too.
        noise = np.random.default_rng(4).integers(0, 256, (600, 800, 4), dtype=np.uint8)
        painter.put_bgra(0, 0, 800, 600, noise.tobytes())
        painter.sync()
        await viewer.wait_for_image(
            lambda image: np.array_equal(image[:, :, :3], noise[:, :, :3]), 15)


def test_a_support_code_bound_through_one_node_cannot_be_bound_through_another(
        tmp_path, x_display, cluster):
    code = cluster.api("a").support_code()
    first = AgentProcess(tmp_path / "first", x_display.display, "--server",
                         cluster.nodes["a"].url, "--code", code)
    try:
        cluster.api("c").live_session(consent="pending")
        second = AgentProcess(tmp_path / "second", x_display.display, "--server",
                              cluster.nodes["b"].url, "--code", code)
        assert second.wait(20) == 1
        assert "the server refused the session" in second.output()
    finally:
        first.stop()


@pytest.mark.anyio
async def test_a_view_only_viewer_on_another_node_cannot_inject(agent_on_a, cluster,
                                                                 x_display):
    _, session, _ = agent_on_a
    before = await pointer_location(x_display.env())
    token = cluster.api("c").viewer_token(session["id"])
    async with open_viewer(cluster.nodes["c"].url, token, view_only=True) as viewer:
        await viewer.next_frame(15)
        await viewer.move(before[0] + 37, before[1] + 11)
        await anyio.sleep(1)
    assert await pointer_location(x_display.env()) == before


@pytest.mark.anyio
async def test_revoking_a_key_through_one_node_disconnects_its_agent_on_another(agent_on_a,
                                                                                 cluster):
    agent_id, session, _ = agent_on_a
    c = cluster.api("c")
    keys = c.get(f"/api/machines/{agent_id}/keys").json()
    assert c.delete(f"/api/machines/{agent_id}/keys/{keys[0]['id']}").status_code == 204

    def ended() -> bool:
        record = cluster.api("b").get(f"/api/sessions/{session['id']}").json()
        return record["ended_at"] is not None

    await eventually(ended, 10, "the revoked key's session ends on node a")


@pytest.mark.anyio
async def test_disconnect_through_another_node_ends_the_session(agent_on_a, cluster):
    _, session, _ = agent_on_a
    assert cluster.api("c").delete(f"/api/sessions/{session['id']}").status_code in (200, 204)
    await eventually(lambda: cluster.api("a").get(f"/api/sessions/{session['id']}").json()[
        "ended_at"] is not None, 10, "the session ends on node a")


def test_login_attempts_spread_over_the_nodes_meet_the_same_limit(cluster):
    """8 logins a minute per address (SPEC 8), counted across nodes in Redis."""
    statuses = []
    for attempt in range(12):
        node = cluster.nodes["abc"[attempt % 3]]
        r = httpx.post(f"{node.url}/api/auth/login",
                       json={"username": "nobody", "password": "wrong-password-1"})
        statuses.append(r.status_code)
    assert statuses[:8] == [401] * 8 and statuses[8:] == [429] * 4


@pytest.mark.anyio
async def test_a_viewer_token_for_an_ended_session_is_refused_on_every_node(agent_on_a,
                                                                            cluster):
    _, session, agent = agent_on_a
    token = cluster.api("b").viewer_token(session["id"])
    agent.stop()
    await eventually(lambda: cluster.api("b").get(f"/api/sessions/{session['id']}").json()[
        "ended_at"] is not None, 10, "the session ends")
    for node in "abc":
        with pytest.raises(SessionRefused):
            async with open_viewer(cluster.nodes[node].url, token):
                pass


@pytest.mark.anyio
async def test_a_viewer_forwarded_to_a_node_that_dies_is_told_why(agent_on_a, cluster):
    _, session, _ = agent_on_a
    token = cluster.api("b").viewer_token(session["id"])
    async with open_viewer(cluster.nodes["b"].url, token) as viewer:
        frame = await viewer.next_frame(15)
        cluster.nodes["a"].kill()
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                frame = await viewer.next_frame(15, after=frame.sequence)
    assert (closed.value.code, closed.value.reason) == (
        1012, "the session's server node went away")


@pytest.mark.anyio
async def test_an_action_on_a_session_whose_node_just_died_is_no_error(agent_on_a, cluster):
    """Before the dead node's lease runs out its sessions still look live elsewhere: an
    operator's action on one reaches no node, and answers as for an ended session."""
    agent_id, session, _ = agent_on_a
    cluster.nodes["a"].kill()
    b = cluster.api("b")
    assert b.delete(f"/api/sessions/{session['id']}").status_code in (200, 204, 404)
    assert b.post(f"/api/machines/{agent_id}/update", json={}).status_code != 500

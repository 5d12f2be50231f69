"""The bus goes away and comes back: nothing live is closed, and the nodes learn again."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

import anyio
import pytest
from remote_server.testing.liveserver import eventually
from remote_server.testing.processes import (
    AgentProcess,
    ServerProcess,
    free_port,
    start_all,
    stop_process,
)
from remote_store_sql.testing import postgres_database

from remote_core.testing.services import require_service, unavailable, unique_name

from .conftest import REDIS_URL, Cluster

pytestmark = [pytest.mark.xvfb, pytest.mark.postgres, pytest.mark.slow, pytest.mark.anyio]

LEASE = 2.0


def start_nats(port: int) -> subprocess.Popen[bytes]:
    binary = shutil.which("nats-server") or "/usr/sbin/nats-server"
    process = subprocess.Popen([binary, "-a", "127.0.0.1", "-p", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("nats-server did not start")


@pytest.fixture
def private_bus(tmp_path):
    if shutil.which("nats-server") is None and not os.path.exists("/usr/sbin/nats-server"):
        unavailable("nats-server is not installed (Debian package nats-server)")
    require_service("Redis", "127.0.0.1", 6379)
    port = free_port()
    process = start_nats(port)
    name = unique_name("outage")
    with postgres_database("outage") as database:
        nodes = {}
        try:
            for node in ("a", "b"):
                nodes[node] = ServerProcess(
                    tmp_path / node, database_url=database.url,
                    bus_url=f"nats://127.0.0.1:{port}", limits_url=REDIS_URL,
                    cluster_name=name, node_id=node, node_lease=LEASE)
            start_all(*nodes.values())
            yield Cluster(nodes, name, tmp_path), port, process
        finally:
            for server in nodes.values():
                server.stop()
            stop_process(process)


async def test_a_bus_outage_longer_than_a_lease_closes_nothing_live(private_bus, tmp_path,
                                                                    x_display):
    cluster, port, bus = private_bus
    agent_id, key = cluster.api("a").machine_with_key()
    agent = AgentProcess(tmp_path / "agent", x_display.display, "--server",
                         cluster.nodes["a"].url, "--key", key)
    try:
        session = cluster.api("b").live_session(agent_id)  # b learnt of it over the bus
        stop_process(bus)
        await anyio.sleep(3 * LEASE)  # the nodes' leases of each other run out
        bus = start_nats(port)
        try:
            def known_again():
                item = cluster.api("b").get(f"/api/sessions/{session['id']}").json()
                return item if item["live"] else None

            item = await eventually(known_again, 20, "node b knows node a's session again")
            assert item["ended_at"] is None, "the session was closed while it was live"
        finally:
            stop_process(bus)
    finally:
        agent.stop()

"""The bus goes away and comes back: nothing live is closed, and the nodes learn again; a
node that alone loses the bus hands its agents to the others (fencing)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator

import anyio
import httpx
import pytest
from remote_server.testing.liveserver import eventually
from remote_server.testing.loadbalancer import LoadBalancer
from remote_server.testing.processes import (
    AgentProcess,
    ServerProcess,
    free_port,
    start_all,
    stop_process,
)
from remote_store_sql.testing import postgres_database

from remote_core.testing.services import require_service, unavailable, unique_name

from .conftest import Cluster, cluster_settings

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


def private_nats() -> tuple[int, subprocess.Popen[bytes]]:
    """A bus of the test's own (it is stopped and started again), and its port."""
    if shutil.which("nats-server") is None and not os.path.exists("/usr/sbin/nats-server"):
        unavailable("nats-server is not installed (Debian package nats-server)")
    require_service("Redis", "127.0.0.1", 6379)
    port = free_port()
    return port, start_nats(port)


@contextlib.contextmanager
def two_nodes(tmp_path, prefix: str, bus_urls: dict[str, str]) -> Iterator[Cluster]:
    """Nodes a and b in cluster mode with a short lease, each on its own bus address."""
    name = unique_name(prefix)
    with postgres_database(prefix) as database:
        nodes = {}
        try:
            for node, url in bus_urls.items():
                nodes[node] = ServerProcess(tmp_path / node, **{
                    **cluster_settings(name, database.url, node), "bus_url": url,
                    "node_lease": LEASE})
            start_all(*nodes.values())
            yield Cluster(nodes, name, tmp_path)
        finally:
            for server in nodes.values():
                server.stop()


@pytest.fixture
def private_bus(tmp_path):
    port, process = private_nats()
    try:
        url = f"nats://127.0.0.1:{port}"
        with two_nodes(tmp_path, "outage", {"a": url, "b": url}) as cluster:
            yield cluster, port, process
    finally:
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
        for node in cluster.nodes.values():  # every node off the bus: none is fenced
            assert readiness(node).status_code == 200, readiness(node).text
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


class CuttableLink:
    """A TCP forwarder to the bus that the test cuts and mends: one node's own way to the
    bus, so that node alone loses it while the others keep it."""

    def __init__(self, target_port: int) -> None:
        self.port = free_port()
        self.url = f"nats://127.0.0.1:{self.port}"
        self._target = target_port
        self._open: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self.mend()

    def mend(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, args=(self._listener,), daemon=True).start()

    def cut(self) -> None:
        """Refuse new connections and drop the open ones, as a lost route does."""
        assert self._listener is not None
        self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        self._listener.close()
        for sock in self._open:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self._open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                near, _ = listener.accept()
            except OSError:
                return
            far = socket.create_connection(("127.0.0.1", self._target))
            self._open += [near, far]
            for source, sink in ((near, far), (far, near)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def readiness(node: ServerProcess) -> httpx.Response:
    return httpx.get(f"{node.url}/readyz", timeout=5)


@pytest.fixture
def links_to_the_bus(tmp_path):
    """Two nodes behind HAProxy, each reaching a private bus through a link of its own."""
    port, bus = private_nats()
    links = {node: CuttableLink(port) for node in ("a", "b")}
    try:
        with two_nodes(tmp_path, "fence", {n: link.url for n, link in links.items()}) as cluster:
            balancer = LoadBalancer(tmp_path / "haproxy",
                                    {n: p.port for n, p in cluster.nodes.items()}).start()
            try:
                yield cluster, links, balancer
            finally:
                balancer.stop()
    finally:
        stop_process(bus)


async def test_a_node_that_alone_loses_the_bus_hands_its_agents_to_the_others(
        links_to_the_bus, tmp_path, x_display):
    """The other node closes the cut-off node's sessions once its lease runs out; the
    cut-off node, finding them closed in the database, ends them, turns new agents away and
    fails /readyz, so the agent comes back through the node the cluster can reach. Mended,
    it is ready again."""
    cluster, links, balancer = links_to_the_bus
    agent_id, key = cluster.api("a").machine_with_key()
    agent = AgentProcess(tmp_path / "agent", x_display.display, "--server", balancer.url,
                         "--key", key)
    try:
        session = cluster.api("a").live_session(agent_id)
        holder = cluster.holder(agent_id)
        other = next(n for n in cluster.nodes if n != holder)
        links[holder].cut()

        def live_on_other():
            sessions = cluster.api(other).get("/api/sessions", params={"live": "true"}).json()
            return next((s for s in sessions if s["agent_id"] == agent_id
                         and s["id"] != session["id"]), None)

        await eventually(live_on_other, 30, f"the agent live again through node {other}")
        assert cluster.holder(agent_id) == other
        ready = readiness(cluster.nodes[holder])
        assert ready.status_code == 503 and "cut off from the cluster" in ready.text
        assert "closed 1 of its sessions" in cluster.nodes[holder].log.read_text()
        _, key_two = cluster.api(other).machine_with_key()
        direct = AgentProcess(tmp_path / "direct", x_display.display, "--server",
                              cluster.nodes[holder].url, "--key", key_two)
        try:  # an agent that reaches the fenced node itself is told to retry
            await eventually(lambda: "cut off from the cluster; reconnect" in direct.output(),
                             20, f"an agent connecting to node {holder} itself turned away")
        finally:
            direct.stop()

        links[holder].mend()
        await eventually(lambda: readiness(cluster.nodes[holder]).status_code == 200, 15,
                         f"node {holder} ready again once back on the bus")
    finally:
        agent.stop()


async def test_a_node_cut_off_holding_no_session_is_fenced_all_the_same(links_to_the_bus):
    """With no session the others could close, the cut-off node learns it alone lost the
    bus from the other node's beats in the database."""
    cluster, links, _ = links_to_the_bus
    links["a"].cut()
    await eventually(lambda: readiness(cluster.nodes["a"]).status_code == 503, 20,
                     "node a, cut off from the bus, not ready")
    assert "cut off from the cluster" in readiness(cluster.nodes["a"]).text
    assert "node(s) b reach the bus" in cluster.nodes["a"].log.read_text()
    assert readiness(cluster.nodes["b"]).status_code == 200
    links["a"].mend()
    await eventually(lambda: readiness(cluster.nodes["a"]).status_code == 200, 15,
                     "node a ready again once back on the bus")

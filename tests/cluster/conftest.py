"""Three real server nodes on one PostgreSQL database, the NATS bus and Redis."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from remote_server.testing.loadbalancer import LoadBalancer
from remote_server.testing.processes import Api, ServerProcess, start_all
from remote_store_sql.testing import postgres_database

from remote_core.testing.services import require_service, unique_name
from remote_core.testing.xvfb import shared_xvfb

NATS_URL = "nats://127.0.0.1:4222"
REDIS_URL = "redis://127.0.0.1:6379/0"


@dataclass
class Cluster:
    nodes: dict[str, ServerProcess]
    name: str
    directory: Path
    _apis: dict[str, Api] = field(default_factory=dict)

    def api(self, node: str) -> Api:
        """The REST API of ``node`` as the first admin, logged in once per node: the login
        limit (8 a minute from one address) is shipped and shared by the nodes."""
        if node not in self._apis:
            self._apis[node] = Api(self.nodes[node])
        return self._apis[node]

    def close(self) -> None:
        for api in self._apis.values():
            api.close()

    def holder(self, agent_id: str) -> str:
        """The node the agent's latest connection reached (its log says so)."""
        held = [(process.log.read_text().rfind(f"agent {agent_id} connected"), name)
                for name, process in self.nodes.items() if process.process is not None]
        position, name = max(held)
        assert position >= 0, f"no node logged agent {agent_id}"
        return name

    def load_balancer(self) -> LoadBalancer:
        return LoadBalancer(self.directory / "haproxy",
                            {name: process.port for name, process in self.nodes.items()})


def cluster_settings(name: str, database_url: str, node: str) -> dict[str, object]:
    """Cluster mode, as the README's three-node deployment sets it (nodes named a, b, c),
    behind the load balancer on this machine."""
    return {"database_url": database_url, "bus_url": NATS_URL, "limits_url": REDIS_URL,
            "cluster_name": name, "node_id": node, "trusted_proxies": "127.0.0.1"}


@pytest.fixture(scope="module")
def x_display():
    """The process-wide Xvfb (the agent suite's, 800x600)."""
    return shared_xvfb(800, 600)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    require_service("NATS", "127.0.0.1", 4222)
    require_service("Redis", "127.0.0.1", 6379)
    name = unique_name("cluster")
    with postgres_database("cluster") as database:
        nodes: dict[str, ServerProcess] = {}
        try:
            for node in ("a", "b", "c"):
                nodes[node] = ServerProcess(tmp_path / node,
                                            **cluster_settings(name, database.url, node))
            start_all(*nodes.values())
            running = Cluster(nodes, name, tmp_path)
            yield running
            running.close()
        finally:
            for process in nodes.values():
                process.stop()

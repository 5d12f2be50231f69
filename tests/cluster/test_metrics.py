"""In cluster mode each node serves its own /metrics: what it holds, under its own node id."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from remote_server.testing.processes import Api, ServerProcess, start_all
from remote_store_sql.testing import postgres_database
from websockets.sync.client import connect

from remote_core.protocol import pb, wrap
from remote_core.testing.services import require_service, unique_name

from .conftest import cluster_settings

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

TOKEN = "cluster-metrics-token-0123456789"


def samples(node: ServerProcess) -> dict[str, list[tuple[dict[str, str], float]]]:
    r = httpx.get(f"{node.url}/metrics", timeout=10,
                  headers={"Authorization": f"Bearer {TOKEN}"})
    r.raise_for_status()
    found: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(r.text):
        for sample in family.samples:
            found.setdefault(sample.name, []).append((sample.labels, sample.value))
    return found


def test_each_node_serves_its_own_metrics(tmp_path: Path) -> None:
    require_service("NATS", "127.0.0.1", 4222)
    require_service("Redis", "127.0.0.1", 6379)
    name = unique_name("metrics")
    with postgres_database("metrics") as database:
        nodes = {}
        try:
            for node in ("a", "b"):
                nodes[node] = ServerProcess(
                    tmp_path / node, metrics="on", metrics_token=TOKEN,
                    **cluster_settings(name, database.url, node))
            start_all(*nodes.values())
            api = Api(nodes["a"])
            agent_id, key = api.machine_with_key()
            with connect(nodes["a"].ws_url("/ws/agent")) as agent:
                agent.send(wrap("session_request", pb.SessionRequest(agent_id=agent_id,
                                                                     session_token=key)))
                api.live_session(agent_id)
                a, b = samples(nodes["a"]), samples(nodes["b"])
            api.close()
        finally:
            for process in nodes.values():
                process.stop()
    assert a["remote_support_agents_online"] == [({}, 1.0)]
    assert b["remote_support_agents_online"] == [({}, 0.0)]
    assert a["remote_support_build_info"][0][0]["node"] == "a"
    assert b["remote_support_build_info"][0][0]["node"] == "b"

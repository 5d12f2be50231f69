"""Cluster benchmark: relaying across nodes, idle agents on one node, a node killed.

Three real ``remote-support serve`` nodes in cluster mode on this machine's
NATS (127.0.0.1:4222), Redis (6379) and a PostgreSQL database of their own,
side by side in one run:

- **relay**: an agent on node a and viewers connected to node a itself, through
  HAProxy naming node a (``/ws/viewer?node=a``, as the viewer token's answer says: the
  shipped configuration sends it straight there), or to node b (which forwards them to
  node a), 1 -> 1 and 1 -> 4 viewers at 100 KB and 1 MB frames: frames per second each
  viewer receives (at most ``WINDOW`` in flight, as in ``bench/relay.py``) and the
  latency at 20 frames/s; once with every process on both cores, once with node a and
  the benchmark's peers on one core and the rest on the other (``--cores``), as nodes on
  machines of their own would be;
- **idle**: ``--idle`` real agents (:mod:`remote_agent.fleet`, shipped
  heartbeat and status intervals, each from its own loopback address, as a
  fleet of machines would be; they join at 150 a second) on node a: its memory
  and CPU over a minute once all are connected;
- **storm**: ``--storm`` agents through HAProxy (the shipped
  ``deploy/haproxy`` configuration) spread over the three nodes; one node is
  killed (SIGKILL) and the time until every agent is online again is taken.

    uv run python -m bench.cluster                   # the full run
    uv run python -m bench.cluster --quick           # a short smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
from remote_agent.fleet import Fleet, raise_fd_limit
from remote_server.testing.liveserver import eventually
from remote_server.testing.loadbalancer import LoadBalancer
from remote_server.testing.processes import ADMIN_PASSWORD, ServerProcess
from remote_store_sql.testing import postgres_database
from websockets.asyncio.client import connect

from bench.relay import PACED_FPS, Session, Viewer, percentile, proc_stats, stream
from bench.report import report
from remote_core.protocol import pb, wrap

SHARED_KEY = "bench-cluster-shared-key"
SCENARIOS = [(1, 100_000), (4, 100_000), (1, 1_000_000), (4, 1_000_000)]
CORES = ("shared", "separate")


@contextlib.contextmanager
def cluster(workdir: Path) -> Iterator[dict[str, ServerProcess]]:
    name = f"bench-{int(time.time())}"
    with postgres_database("bench_cluster") as database:
        nodes: dict[str, ServerProcess] = {}
        try:
            for node in "abc":
                nodes[node] = ServerProcess(
                    workdir / node, database_url=database.url, bus_url="nats://127.0.0.1:4222",
                    limits_url="redis://127.0.0.1:6379/0", cluster_name=name, node_id=node,
                    trusted_proxies="127.0.0.1", shared_agent_key=SHARED_KEY).start()
            yield nodes
        finally:
            for process in nodes.values():
                process.stop()


_logins: dict[str, str] = {}


@contextlib.asynccontextmanager
async def _client(url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        if url not in _logins:  # logins are rate-limited
            r = await http.post("/api/auth/login", json={"username": "admin",
                                                          "password": ADMIN_PASSWORD})
            _logins[url] = r.json()["access_token"]
        http.headers["Authorization"] = "Bearer " + _logins[url]
        yield http


@contextlib.asynccontextmanager
async def session(agent_url: str, viewer_url: str, viewers: int,
                  socket_url: str | None = None) -> AsyncIterator[Session]:
    """A keyed agent on one node and ``viewers`` viewers whose tokens come from another
    (or the same), connected to that node, or to ``socket_url`` (a balancer) naming the
    node the token's answer names."""
    opts: dict[str, Any] = {"max_size": None, "compression": None}
    async with _client(agent_url) as http, _client(viewer_url) as other:
        agent_id = (await http.post("/api/machines", json={})).json()["agent_id"]
        key = (await http.post(f"/api/machines/{agent_id}/keys", json={})).json()["key"]
        agent = await connect(agent_url.replace("http", "ws") + "/ws/agent", **opts)
        await agent.send(wrap("session_request", pb.SessionRequest(session_token=key)))
        session_id = pb.Message.FromString(await agent.recv()).session_response.session_id
        await asyncio.sleep(1.0)  # the other nodes have heard of the session
        peers = []
        for _ in range(viewers):
            r = await other.post(f"/api/sessions/{session_id}/viewer-token")
            url = (f"{socket_url}/ws/viewer?node={r.json()['node']}" if socket_url
                   else f"{viewer_url}/ws/viewer")
            ws = await connect(url.replace("http", "ws", 1), **opts)
            await ws.send(wrap("session_request",
                               pb.SessionRequest(session_token=r.json()["token"])))
            answer = pb.Message.FromString(await ws.recv())
            assert answer.session_response.success, answer
            peers.append(Viewer(ws, False))
    await asyncio.sleep(0.3)

    async def drain() -> None:
        with contextlib.suppress(Exception):
            async for _ in agent:
                pass

    drainer = asyncio.create_task(drain())
    try:
        yield Session(agent, peers, False)
    finally:
        for ws in [agent, *(v.ws for v in peers)]:
            await ws.close()
        drainer.cancel()


def pin(pid: int, cpus: set[int]) -> None:
    """Every thread of ``pid`` onto ``cpus`` (threads it starts later inherit them)."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(ProcessLookupError):  # a thread that just ended
            os.sched_setaffinity(int(tid), cpus)


@contextlib.contextmanager
def cores(nodes: dict[str, ServerProcess], balancer: LoadBalancer,
          separate: bool) -> Iterator[None]:
    """With ``separate``, the agent's node and this benchmark's peers on one core, the other
    nodes and HAProxy on the other, as on machines of their own: the hop's work is then
    not taken from the node it relays for. Without, every process on every core."""
    every = set(range(os.cpu_count() or 1))
    if separate and len(every) < 2:
        raise SystemExit("--cores separate needs a machine with two cores or more")
    home, away = ({0}, every - {0}) if separate else (every, every)
    others = [p.process.pid for n, p in nodes.items() if n != "a" and p.process]
    placed = {os.getpid(): home, nodes["a"].process.pid: home,  # type: ignore[union-attr]
              balancer.pid: away} | dict.fromkeys(others, away)
    for pid, cpus in placed.items():
        pin(pid, cpus)
    try:
        yield
    finally:
        for pid in placed:
            pin(pid, every)


async def relay_row(nodes: dict[str, ServerProcess], balancer: LoadBalancer, where: str,
                    viewers: int, size: int, seconds: float, separate: bool) -> dict[str, Any]:
    viewer_node = "a" if where == "same node" else "b"
    routed = balancer.url if where == "routed" else None
    with cores(nodes, balancer, separate):
        async with session(nodes["a"].url, nodes[viewer_node].url, viewers, routed) as s:
            await stream(s, size, 10, None)  # warm-up
            sent, elapsed = 0, 0.0
            deadline = time.perf_counter() + seconds
            while time.perf_counter() < deadline:
                for v in s.viewers:
                    v.received, v.latencies = 0, []
                took, _ = await stream(s, size, 20, None)
                sent, elapsed = sent + 20, elapsed + took
            for v in s.viewers:
                v.received, v.latencies = 0, []
            await stream(s, size, max(20, int(seconds * PACED_FPS / 2)), PACED_FPS)
            latencies = [x for v in s.viewers for x in v.latencies]
    return {"cores": "separate" if separate else "shared", "where": where,
            "viewers": viewers, "frame_kb": size // 1000,
            "fps": sent / elapsed, "mbit_s": sent / elapsed * size * 8 / 1e6 * viewers,
            "p50_ms": statistics.median(latencies), "p99_ms": percentile(latencies, 0.99)}


def ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for placing, (viewers, size) in itertools.product(CORES, SCENARIOS):
        found = {r["where"]: r for r in rows if r["cores"] == placing
                 and r["viewers"] == viewers and r["frame_kb"] == size // 1000}
        if not found:
            continue
        same = found["same node"]
        for where in ("routed", "cross node"):
            out.append({"cores": placing, "viewers": viewers, "frame_kb": size // 1000,
                        "where": where,
                        "vs_same_fps": found[where]["fps"] / same["fps"],
                        "added_p50_ms": found[where]["p50_ms"] - same["p50_ms"]})
    return out


async def idle(nodes: dict[str, ServerProcess], count: int, seconds: float) -> dict[str, Any]:
    node = nodes["a"]
    assert node.process is not None
    pid = node.process.pid
    rss0, _ = proc_stats(pid)
    fleet = Fleet(node.url, SHARED_KEY, count, ramp=count / 150, spread=True)
    async with asyncio.timeout(count / 150 + seconds + 600):
        task = asyncio.create_task(fleet.run())
        try:
            started = time.monotonic()
            await eventually(lambda: fleet.online() == count, count / 150 + 300,
                             "the idle fleet connected")
            connected = time.monotonic() - started
            await asyncio.sleep(15)  # every agent has beaten and reported once
            rss1, cpu1 = proc_stats(pid)
            await asyncio.sleep(seconds)
            rss2, cpu2 = proc_stats(pid)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        left = time.monotonic()
        await settled(pid)
    return {"agents": count, "connect_s": connected, "rss_before_mb": rss0,
            "rss_idle_mb": max(rss1, rss2), "kb_per_agent": (max(rss1, rss2) - rss0) * 1024 / count,
            "cpu_percent_of_one_core": 100 * (cpu2 - cpu1) / seconds, "window_s": seconds,
            "departure_s": time.monotonic() - left}


async def settled(pid: int, busy: float = 0.1) -> None:
    """Until the node at ``pid`` is quiet (under ``busy`` of a core for a second): done
    with the sessions of agents that left, so what runs next is not measured against
    that work."""
    _, before = proc_stats(pid)
    async with asyncio.timeout(600):
        while True:
            await asyncio.sleep(1.0)
            _, now = proc_stats(pid)
            if now - before < busy:
                return
            before = now


async def storm(nodes: dict[str, ServerProcess], balancer: LoadBalancer,
                count: int) -> dict[str, Any]:
    fleet = Fleet(balancer.url, SHARED_KEY, count, ramp=count / 400, spread=True)
    task = asyncio.create_task(fleet.run())
    try:
        await eventually(lambda: fleet.online() == count, count / 400 + 300,
                         "the fleet connected through the load balancer")
        await asyncio.sleep(2)
        killed = time.monotonic()
        nodes["c"].kill()

        def settled() -> bool:
            """Every agent online, and none connected for two seconds: the dead node's
            agents have all come back (a kill drops their sockets at once)."""
            last = max(a.connections[-1] for a in fleet.agents)
            return fleet.online() == count and last > killed and time.monotonic() - last > 2

        await eventually(settled, 600, "every agent of the dead node came back")
        back = max(a.connections[-1] for a in fleet.agents)
        moved = sum(a.connections[-1] > killed for a in fleet.agents)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    return {"agents": count, "nodes": 3, "reconnected": moved,
            "all_online_after_kill_s": back - killed}


async def run(args: argparse.Namespace, workdir: Path) -> None:
    with cluster(workdir) as nodes:
        if "relay" in args.parts:
            rows = []
            balancer = LoadBalancer(workdir / "haproxy-relay",
                                    {n: p.port for n, p in nodes.items()}).start()
            try:
                for placing, (viewers, size) in itertools.product(args.cores, SCENARIOS):
                    for where in ("same node", "routed", "cross node"):
                        rows.append(await relay_row(nodes, balancer, where, viewers, size,
                                                    args.seconds, placing == "separate"))
            finally:
                balancer.stop()
            report("cluster_relay", rows, title="Relay: viewer on the agent's node, sent "
                                                "there by HAProxy, or forwarded by another")
            report("cluster_ratios", ratios(rows), title="Routed and forwarded against "
                                                         "same-node relay",
                   notes=["Goal: at least 0.7 of same-node throughput, at most 1 ms added "
                          "p50. routed: through HAProxy naming the session's node (what the "
                          "console does); cross node: a viewer that reached another node, "
                          "which forwards it. cores: shared, every process on both of this "
                          "machine's cores; separate, node a and the benchmark's agent and "
                          "viewers on one, the other nodes and HAProxy on the other, as "
                          "they would be on machines of their own."])
        if "idle" in args.parts:
            report("cluster_idle", [await idle(nodes, args.idle, args.idle_seconds)],
                   title="Idle agents on one cluster node",
                   notes=["Shipped intervals: heartbeat 15 s, status report 60 s. Goal: "
                          "under 1 GiB and 10% of one core for 10,000 agents. departure: "
                          "from the fleet leaving until the node is quiet again (its "
                          "sessions ended), before the storm starts."])
        if "storm" not in args.parts:
            return
        balancer = LoadBalancer(workdir / "haproxy",
                                {n: p.port for n, p in nodes.items()}).start()
        try:
            report("cluster_storm", [await storm(nodes, balancer, args.storm)],
                   title="A node killed under a fleet behind HAProxy",
                   notes=["Goal: every agent online again within 15 s."])
        finally:
            balancer.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="per relay row")
    parser.add_argument("--idle", type=int, default=10_000)
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--storm", type=int, default=2_000)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--cores", default=",".join(CORES), type=lambda v: v.split(","),
                        help="relay with the processes on shared or separate cores, or both")
    parser.add_argument("--parts", default="relay,idle,storm",
                        help="which of relay, idle, storm to run (comma-separated)")
    args = parser.parse_args(argv)
    if not args.cores or set(args.cores) - set(CORES):
        parser.error(f"--cores takes {' or '.join(CORES)} (comma-separated)")
    if args.quick:
        args.seconds, args.idle, args.idle_seconds, args.storm = 1.0, 200, 5.0, 200
    raise_fd_limit(4 * max(args.idle, args.storm) + 4096)
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(run(args, Path(tmp)))


if __name__ == "__main__":
    main()

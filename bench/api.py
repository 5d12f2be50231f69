"""REST API benchmark: Argon2 logins beside idle agents, and listing 10,000 machines.

A real ``remote-support serve`` process on a temporary database (SQLite unless
``--database-url`` names another); the clients run in this process on
127.0.0.1.

1. **Logins with heartbeats.** ``--agents`` idle agents (shared key) send a
   Heartbeat every ``--heartbeat`` seconds and time each HeartbeatAck. First
   the agents alone (baseline), then the same while ``--login-workers``
   clients log in back to back (Argon2id verification off the event loop; each
   request from its own address through X-Forwarded-For, so the 8/min limit
   does not cut the measurement short). The point: hashing must not stall the
   loop, so ack p99 must stay near the baseline.
2. **GET /api/machines** with ``--machines`` machines in the database: whole
   list and one page of 100, ``--requests`` times each.

    uv run python -m bench.api              # full size: 200 agents, 10,000 machines
    uv run python -m bench.api --quick      # a small smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import statistics
import subprocess
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
from remote_server.settings import ServerSettings
from remote_server.web.context import open_store
from websockets.asyncio.client import ClientConnection, connect

from bench.report import report
from remote_core.plugins import get_plugin_manager
from remote_core.protocol import pb, wrap
from remote_core.testing.processes import stop_process

ADMIN_PASSWORD = "bench-admin-password"
SHARED_KEY = "bench-shared-agent-key"
STARTED = re.compile(rb"listening on http://127\.0\.0\.1:(\d+)")


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


# -- the server ---------------------------------------------------------------------------------
async def seed_machines(database_url: str, count: int) -> None:
    settings = ServerSettings().replace(database_url=database_url)
    store = open_store(settings, get_plugin_manager(settings))
    await store.open()
    try:
        for n in range(count):
            await store.create_machine(str(uuid.uuid4()), f"org-{n % 50}", f"site-{n % 7}",
                                       (f"tag-{n % 13}",))
    finally:
        await store.close()


@contextlib.contextmanager
def serve(database_url: str) -> Iterator[str]:
    env = {**os.environ, "REMOTE_SUPPORT_ADMIN_PASSWORD": ADMIN_PASSWORD,
           "REMOTE_SUPPORT_SHARED_AGENT_KEY": SHARED_KEY,
           "REMOTE_SUPPORT_TRUSTED_PROXIES": "127.0.0.1"}
    proc = subprocess.Popen(["remote-support", "serve", "--port", "0", "--log-level", "info",
                             "--database-url", database_url],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        assert proc.stderr is not None
        port = None
        for line in proc.stderr:
            if match := STARTED.search(line):
                port = int(match.group(1))
                break
        if port is None:
            raise RuntimeError(f"server exited with {proc.wait()}")
        # Keep reading the log so the server never blocks on a full pipe.
        threading.Thread(target=proc.stderr.read, daemon=True).start()
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process(proc, 30.0)


# -- idle agents ----------------------------------------------------------------------
class Agents:
    """Idle agents timing their heartbeat acks; ``recording`` selects where samples go."""

    def __init__(self) -> None:
        self.samples: dict[str, list[float]] = {}
        self.recording = "warmup"

    async def agent(self, url: str, interval: float, stop: asyncio.Event,
                    ready: asyncio.Semaphore) -> None:
        async with connect(url, open_timeout=30, max_size=None) as ws:
            await ws.send(wrap("session_request", pb.SessionRequest(
                agent_id=str(uuid.uuid4()), session_token=SHARED_KEY, client_version="1.0.0")))
            await self._expect_session(ws)
            ready.release()
            sent: deque[float] = deque()
            reader = asyncio.create_task(self._acks(ws, sent))
            await asyncio.sleep(interval * (hash(id(ws)) % 1000) / 1000)  # spread the beats
            while not stop.is_set():
                sent.append(time.perf_counter())
                await ws.send(wrap("heartbeat", pb.Heartbeat(timestamp=int(time.time() * 1000))))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), interval)
            reader.cancel()

    @staticmethod
    async def _expect_session(ws: ClientConnection) -> None:
        while True:
            message = pb.Message()
            message.ParseFromString(await ws.recv())
            if message.WhichOneof("payload") == "session_response":
                assert message.session_response.success, message.session_response.error
                return

    async def _acks(self, ws: ClientConnection, sent: deque[float]) -> None:
        while True:
            message = pb.Message()
            message.ParseFromString(await ws.recv())
            if message.WhichOneof("payload") == "heartbeat_ack" and sent:
                rtt = (time.perf_counter() - sent.popleft()) * 1000
                self.samples.setdefault(self.recording, []).append(rtt)


@contextlib.asynccontextmanager
async def idle_agents(base: str, count: int, interval: float) -> AsyncIterator[Agents]:
    agents = Agents()
    stop = asyncio.Event()
    ready = asyncio.Semaphore(0)
    url = base.replace("http://", "ws://") + "/ws/agent"
    tasks = [asyncio.create_task(agents.agent(url, interval, stop, ready)) for _ in range(count)]
    for _ in range(count):
        await ready.acquire()
    try:
        yield agents
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)


# -- measurements ---------------------------------------------------------------------
async def login_storm(base: str, workers: int, seconds: float) -> tuple[int, list[float]]:
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds
    counter = iter(range(10**9))

    async def worker(http: httpx.AsyncClient) -> None:
        while time.perf_counter() < deadline:
            n = next(counter)
            ip = f"10.{n // 65536 % 256}.{n // 256 % 256}.{n % 256}"
            start = time.perf_counter()
            r = await http.post("/api/auth/login", headers={"X-Forwarded-For": ip},
                                json={"username": "admin", "password": ADMIN_PASSWORD})
            assert r.status_code == 200, r.text
            latencies.append((time.perf_counter() - start) * 1000)

    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        await asyncio.gather(*(worker(http) for _ in range(workers)))
    return len(latencies), latencies


def ack_row(phase: str, samples: list[float], **extra: Any) -> dict[str, Any]:
    return {"phase": phase, "acks": len(samples), "ack p50 ms": percentile(samples, 50),
            "ack p99 ms": percentile(samples, 99), "ack max ms": max(samples, default=0.0),
            **extra}


async def bench_logins(base: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    async with idle_agents(base, args.agents, args.heartbeat) as agents:
        await asyncio.sleep(args.heartbeat * 2)
        agents.recording = "baseline"
        await asyncio.sleep(args.seconds)
        agents.recording = "logins"
        count, latencies = await login_storm(base, args.login_workers, args.seconds)
        agents.recording = "after"
    rows = [ack_row("agents only", agents.samples.get("baseline", []), **{
        "logins/s": 0.0, "login p50 ms": "", "login p99 ms": ""})]
    rows.append(ack_row(f"agents + {args.login_workers} login workers",
                        agents.samples.get("logins", []), **{
                            "logins/s": count / args.seconds,
                            "login p50 ms": percentile(latencies, 50),
                            "login p99 ms": percentile(latencies, 99)}))
    return rows


async def every_page(http: httpx.AsyncClient, path: str, params: dict[str, Any], *,
                     follow: bool) -> int:
    """Items of a list: its first page, or (``follow``) every page by the Link header."""
    size = 0
    r = await http.get(path, params=params)
    while True:
        assert r.status_code == 200, r.text
        size += len(r.json())
        following = r.links.get("next")
        if not follow or following is None:
            return size
        r = await http.get(following["url"])


async def bench_machines(base: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=base, timeout=120) as http:
        r = await http.post("/api/auth/login", headers={"X-Forwarded-For": "10.255.0.1"},
                            json={"username": "admin", "password": ADMIN_PASSWORD})
        http.headers["Authorization"] = f"Bearer {r.json()['access_token']}"
        rows = []
        for label, params in (("whole list, pages of 1000", {"limit": 1000}),
                              ("first page of 100", {"limit": 100}),
                              ("filtered: one organization", {"organization": "org-7",
                                                              "limit": 1000})):
            times: list[float] = []
            size = 0
            for _ in range(args.requests):
                start = time.perf_counter()
                size = await every_page(http, "/api/machines", params,
                                        follow="whole" in label or "filtered" in label)
                times.append((time.perf_counter() - start) * 1000)
            rows.append({"request": f"GET /api/machines ({label})",
                         "machines in db": args.machines + args.agents, "returned": size,
                         "p50 ms": percentile(times, 50),
                         "p99 ms": percentile(times, 99), "mean ms": statistics.fmean(times)})
    return rows


async def main_async(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        database_url = args.database_url or f"sqlite:///{Path(tmp) / 'bench.db'}"
        started = time.perf_counter()
        await seed_machines(database_url, args.machines)
        seeded = time.perf_counter() - started
        with serve(database_url) as base:
            login_rows = await bench_logins(base, args)
            machine_rows = await bench_machines(base, args)
    where = database_url.split("://", 1)[0]
    shared = f"{os.cpu_count()} CPUs shared with other work; load average {os.getloadavg()}"
    report("api_logins", login_rows,
           title=f"Argon2id logins beside {args.agents} idle agents (heartbeat every "
                 f"{args.heartbeat} s, {args.seconds} s per phase, {where})",
           notes=[shared])
    report("api_machines", machine_rows,
           title=f"GET /api/machines with {args.machines} machines ({where}; seeded in "
                 f"{seeded:.1f} s)", notes=[shared])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, default=200)
    parser.add_argument("--machines", type=int, default=10_000)
    parser.add_argument("--heartbeat", type=float, default=1.0,
                        help="seconds between one agent's heartbeats")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each phase")
    parser.add_argument("--login-workers", type=int, default=4)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--quick", action="store_true", help="a small smoke run")
    args = parser.parse_args()
    if args.quick:
        args.agents, args.machines, args.seconds, args.requests = 20, 500, 3.0, 5
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()

"""Relay benchmark: throughput and added latency through the server, against two baselines.

Everything runs side by side in one process tree on 127.0.0.1:

- **ours**: ``remote-support serve`` (a temporary SQLite database), a keyed
  agent and viewers holding real viewer tokens;
- **bare**: a bare Starlette pass-through relay (each agent message awaited
  into every viewer socket) under the same uvicorn and allocator settings;
- **websockify**: Debian's websockify relaying the same payloads: agent and
  viewers speak WebSocket to websockify, which bridges each to a tiny TCP
  fan-out hub (length-prefixed frames), so each frame crosses two websockify
  hops where the other relays have one.

The peers are ``websockets`` clients in this process, identical for every
relay. Throughput keeps at most ``WINDOW`` frames in flight to the slowest
viewer (no frame is dropped); latency is measured at a paced 20 frames/s. Each
uvicorn WebSocket implementation and event loop is measured for ours and bare,
so the server's defaults are chosen by measurement. Then 1,000 idle agents
(shared key, heartbeats) measure the server's memory and CPU, and a last table
gives the per-message cost of what the hot path does with a frame.

    uv run python -m bench.relay            # the full run (several minutes)
    uv run python -m bench.relay --quick    # a small smoke run
    uv run python -m bench.relay --impls websockets-sansio --loops uvloop --repeats 5
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import resource
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import timeit
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from remote_server.web.serving import tune_allocator
from websockets.asyncio.client import ClientConnection, connect

from bench.report import report
from remote_core.protocol import Connection, Role, is_keyframe, pb, wrap
from remote_core.testing.processes import stop_process

ROOT = Path(__file__).resolve().parent.parent
ADMIN_PASSWORD = "bench-admin-password"
SHARED_KEY = "bench-shared-agent-key"
MARK = b"RELAYTS!"
WINDOW = 4
PACED_FPS = 20
IMPLS = ("websockets", "websockets-sansio", "wsproto")
LOOPS = ("asyncio", "uvloop")


# -- processes ------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args} exited with {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {port}")


def _more_files() -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 20000), hard))


@contextlib.contextmanager
def process(args: list[str], port: int, **env: str) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(args, cwd=ROOT, env={**os.environ, **env},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=_more_files)
    try:
        wait_port(port, proc)
        yield proc
    finally:
        stop_process(proc)


@contextlib.contextmanager
def ours(ws: str, loop: str, **env: str) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """``remote-support serve`` on a temporary SQLite database; ``env`` adds settings
    (``{TMP}`` in a value is that temporary folder)."""
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        args = [sys.executable, "-m", "remote_server.cli", "serve", "--port", str(port),
                "--ws-impl", ws, "--loop", loop, "--log-level", "error",
                "--database-url", f"sqlite:///{tmp}/bench.db"]
        with process(args, port, REMOTE_SUPPORT_ADMIN_PASSWORD=ADMIN_PASSWORD,
                     REMOTE_SUPPORT_SHARED_AGENT_KEY=SHARED_KEY,
                     **{k: v.replace("{TMP}", tmp) for k, v in env.items()}) as proc:
            yield port, proc


@contextlib.contextmanager
def bare(ws: str, loop: str) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    port = free_port()
    args = [sys.executable, "-m", "bench.relay", "--serve-bare", str(port), "--ws", ws,
            "--loop", loop]
    with process(args, port) as proc:
        yield port, proc


@contextlib.contextmanager
def websockify() -> Iterator[int]:
    hub_port, port = free_port(), free_port()
    hub = [sys.executable, "-m", "bench.relay", "--serve-hub", str(hub_port)]
    proxy = ["/usr/bin/websockify", f"127.0.0.1:{port}", f"127.0.0.1:{hub_port}"]
    with process(hub, hub_port), process(proxy, port):
        yield port


# -- the bare relay and the hub (run in their own processes) ----------------------------------
def serve_bare(port: int, ws: str, loop: str) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import WebSocketRoute
    from starlette.websockets import WebSocket

    viewers: set[WebSocket] = set()

    async def agent(websocket: WebSocket) -> None:
        await websocket.accept()
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            data = message.get("bytes")
            for viewer in list(viewers):
                try:
                    await viewer.send_bytes(data)
                except Exception:
                    viewers.discard(viewer)

    async def viewer(websocket: WebSocket) -> None:
        await websocket.accept()
        viewers.add(websocket)
        try:
            while (await websocket.receive())["type"] != "websocket.disconnect":
                pass
        finally:
            viewers.discard(websocket)

    app = Starlette(routes=[WebSocketRoute("/ws/agent", agent),
                            WebSocketRoute("/ws/viewer", viewer)])
    tune_allocator()  # the same process settings as ours
    uvicorn.run(app, host="127.0.0.1", port=port, ws=ws, loop=loop, log_level="error",
                ws_max_size=16 * 1024 * 1024, ws_per_message_deflate=False,
                ws_ping_interval=None, lifespan="off")


def serve_hub(port: int) -> None:
    """TCP fan-out behind websockify: the first byte says agent (A) or viewer (V)."""
    viewers: set[asyncio.StreamWriter] = set()

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        role = await reader.readexactly(1)
        if role == b"V":
            viewers.add(writer)
            with contextlib.suppress(Exception):
                await reader.read()
            viewers.discard(writer)
            return
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                header = await reader.readexactly(4)
                body = await reader.readexactly(struct.unpack("<I", header)[0])
                for viewer in list(viewers):
                    viewer.write(header + body)
                    await viewer.drain()

    async def main() -> None:
        server = await asyncio.start_server(client, "127.0.0.1", port)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


# -- peers -------------------------------------------------------------------------------------
def make_frame(size: int) -> tuple[bytearray, int]:
    """A keyframe ``Message`` of about ``size`` bytes and where its timestamp slot is."""
    data = wrap("video_frame", pb.VideoFrame(sequence=1, display_id=1, raw=pb.RawFrame(
        width=1, height=1, is_keyframe=True, data=MARK + bytes(size - len(MARK)))))
    return bytearray(data), data.find(MARK)


@dataclass
class Viewer:
    ws: ClientConnection
    framed: bool  # websockify: a TCP byte stream re-chunked into messages
    received: int = 0
    latencies: list[float] = field(default_factory=list)
    buffer: bytearray = field(default_factory=bytearray)

    async def run(self, offset: int, progress: asyncio.Event) -> None:
        async for message in self.ws:
            now = time.perf_counter_ns()
            assert isinstance(message, bytes)
            if not self.framed:
                self._got(message, offset, now)
            else:
                self.buffer += message
                while len(self.buffer) >= 4:
                    length = struct.unpack_from("<I", self.buffer)[0]
                    if len(self.buffer) < 4 + length:
                        break
                    self._got(bytes(self.buffer[4:4 + length]), offset, now)
                    del self.buffer[:4 + length]
            progress.set()

    def _got(self, frame: bytes, offset: int, now: int) -> None:
        sent = struct.unpack_from("<Q", frame, offset)[0]
        self.latencies.append((now - sent) / 1e6)
        self.received += 1


@dataclass
class Session:
    agent: ClientConnection
    viewers: list[Viewer]
    framed: bool


async def _drain(ws: ClientConnection) -> None:
    with contextlib.suppress(Exception):
        async for _ in ws:
            pass


_logins: dict[int, str] = {}


@contextlib.asynccontextmanager
async def session(kind: str, port: int, viewers: int) -> AsyncIterator[Session]:
    url = f"ws://127.0.0.1:{port}"
    opts: dict[str, Any] = {"max_size": None, "compression": None}
    if kind == "ours":
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
            if port not in _logins:  # logins are rate-limited: one per server
                r = await http.post("/api/auth/login", json={"username": "admin",
                                                              "password": ADMIN_PASSWORD})
                _logins[port] = r.json()["access_token"]
            http.headers["Authorization"] = "Bearer " + _logins[port]
            agent_id = (await http.post("/api/machines", json={})).json()["agent_id"]
            key = (await http.post(f"/api/machines/{agent_id}/keys", json={})).json()["key"]
            agent = await connect(f"{url}/ws/agent", **opts)
            await agent.send(wrap("session_request", pb.SessionRequest(session_token=key)))
            answer = pb.Message.FromString(await agent.recv())
            session_id = answer.session_response.session_id
            peers = []
            for _ in range(viewers):
                r = await http.post(f"/api/sessions/{session_id}/viewer-token")
                ws = await connect(f"{url}/ws/viewer", **opts)
                await ws.send(wrap("session_request",
                                   pb.SessionRequest(session_token=r.json()["token"])))
                assert pb.Message.FromString(await ws.recv()).session_response.success
                peers.append(Viewer(ws, False))
    elif kind == "bare":
        peers = [Viewer(await connect(f"{url}/ws/viewer", **opts), False)
                 for _ in range(viewers)]
        agent = await connect(f"{url}/ws/agent", **opts)
    else:
        peers = []
        for _ in range(viewers):
            ws = await connect(url, **opts)
            await ws.send(b"V")
            peers.append(Viewer(ws, True))
        agent = await connect(url, **opts)
        await agent.send(b"A")
    await asyncio.sleep(0.3)  # every viewer registered on the far side
    drain = asyncio.create_task(_drain(agent))
    try:
        yield Session(agent, peers, kind == "websockify")
    finally:
        for ws in [agent, *(v.ws for v in peers)]:
            await ws.close()
        drain.cancel()


async def stream(s: Session, size: int, frames: int, fps: float | None) -> tuple[float, Session]:
    """Send ``frames`` frames (paced at ``fps``, or as fast as the window allows)."""
    template, offset = make_frame(size)
    progress = asyncio.Event()
    tasks = [asyncio.create_task(v.run(offset, progress)) for v in s.viewers]
    start = time.perf_counter()
    for sent in range(frames):
        while sent - min(v.received for v in s.viewers) >= WINDOW:
            progress.clear()
            await asyncio.wait_for(progress.wait(), 30)
        if fps is not None:
            await asyncio.sleep(max(0.0, start + sent / fps - time.perf_counter()))
        struct.pack_into("<Q", template, offset, time.perf_counter_ns())
        payload = bytes(template)
        await s.agent.send(struct.pack("<I", len(payload)) + payload if s.framed else payload)
    while min(v.received for v in s.viewers) < frames:
        progress.clear()
        await asyncio.wait_for(progress.wait(), 30)
    elapsed = time.perf_counter() - start
    for task in tasks:
        task.cancel()
    return elapsed, s


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def throughput(kind: str, port: int, viewers: int, size: int, seconds: float,
                     pid: int | None = None) -> tuple[float, float]:
    """Frames per second each viewer received (at most ``WINDOW`` in flight), and the
    server's CPU microseconds per frame (NaN when the relay is not one process)."""
    frames = max(20, int(seconds * (3000 if size <= 200_000 else 300)))
    async with session(kind, port, viewers) as s:
        await stream(s, size, 10, None)  # warm-up
        for v in s.viewers:
            v.received = 0
        deadline = time.perf_counter() + seconds
        sent, elapsed = 0, 0.0
        cpu0 = proc_stats(pid)[1] if pid else 0.0
        while time.perf_counter() < deadline:  # in slices, so a slow relay ends in time
            batch = max(10, frames // 20)
            took, _ = await stream(s, size, batch, None)
            sent, elapsed = sent + batch, elapsed + took
            for v in s.viewers:
                v.received = 0
        cpu = (proc_stats(pid)[1] - cpu0) / sent * 1e6 if pid else float("nan")
    return sent / elapsed, cpu


async def latency(kind: str, port: int, viewers: int, size: int, frames: int
                  ) -> tuple[float, float]:
    """(p50, p99) milliseconds from the agent's send to each viewer's receive, paced."""
    async with session(kind, port, viewers) as s:
        await stream(s, size, 10, None)
        for v in s.viewers:
            v.received, v.latencies = 0, []
        await stream(s, size, frames, PACED_FPS)
        values = [x for v in s.viewers for x in v.latencies]
    return statistics.median(values), percentile(values, 0.99)


SCENARIOS = [(1, 2_000), (1, 100_000), (4, 100_000), (1, 1_000_000), (4, 1_000_000)]
"""(viewers, frame bytes): a typed word's frame, then pictures."""


def measure_side_by_side(targets: dict[str, tuple[int, int | None]], seconds: float,
                         repeats: int,
                         paced_frames: int) -> dict[tuple[str, int, int], dict[str, Any]]:
    """Each scenario on every target, the targets interleaved; throughput is best of
    ``repeats`` (the machine is shared: the best run is the least disturbed)."""
    out: dict[tuple[str, int, int], dict[str, Any]] = {}
    for viewers, size in SCENARIOS:
        best = dict.fromkeys(targets, 0.0)
        cpu: dict[str, list[float]] = {kind: [] for kind in targets}
        for _ in range(repeats):
            for kind, (port, pid) in targets.items():
                fps, us = asyncio.run(throughput(kind, port, viewers, size, seconds, pid))
                best[kind] = max(best[kind], fps)
                cpu[kind].append(us)
        for kind, (port, _) in targets.items():
            p50, p99 = asyncio.run(latency(kind, port, viewers, size, paced_frames))
            fps = best[kind]
            out[(kind, viewers, size)] = {
                "frames_s": fps, "mb_s_in": fps * size / 1e6,
                "mb_s_out": fps * size * viewers / 1e6, "p50_ms": p50, "p99_ms": p99,
                "cpu_us_per_frame": min(cpu[kind])}
    return out


def run_matrix(impls: tuple[str, ...], loops: tuple[str, ...], seconds: float, repeats: int,
               paced_frames: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []

    def add(ws: str, loop: str, results: dict[tuple[str, int, int], dict[str, Any]]) -> None:
        for (relay, viewers, size), result in results.items():
            rows.append({"relay": relay, "ws": ws if relay != "websockify" else "-",
                         "loop": loop if relay != "websockify" else "-", "viewers": viewers,
                         "frame_kb": size // 1000, **result})

    first = True
    for ws in impls:
        for loop in loops:
            with contextlib.ExitStack() as stack:
                targets: dict[str, tuple[int, int | None]] = {}
                for kind, server in (("ours", ours), ("bare", bare)):
                    port, proc = stack.enter_context(server(ws, loop))
                    targets[kind] = (port, proc.pid)
                if first:  # websockify has no such settings: measured once, beside the first
                    targets["websockify"] = (stack.enter_context(websockify()), None)
                    first = False
                add(ws, loop, measure_side_by_side(targets, seconds, repeats, paced_frames))
    return rows


def ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ours against bare (same ws and loop) and against websockify, per scenario."""
    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return (r["ws"], r["loop"], r["viewers"], r["frame_kb"])

    bares = {key(r): r for r in rows if r["relay"] == "bare"}
    socks = {(r["viewers"], r["frame_kb"]): r for r in rows if r["relay"] == "websockify"}
    out = []
    for r in rows:
        if r["relay"] != "ours":
            continue
        b, w = bares[key(r)], socks[(r["viewers"], r["frame_kb"])]
        out.append({"ws": r["ws"], "loop": r["loop"], "viewers": r["viewers"],
                    "frame_kb": r["frame_kb"], "ours_frames_s": r["frames_s"],
                    "vs_bare": r["frames_s"] / b["frames_s"],
                    "vs_websockify": r["frames_s"] / w["frames_s"],
                    "cpu_vs_bare": r["cpu_us_per_frame"] / b["cpu_us_per_frame"],
                    "p50_added_vs_bare_ms": r["p50_ms"] - b["p50_ms"]})
    return out


def fastest(rows: list[dict[str, Any]]) -> tuple[str, str]:
    """The (ws, loop) under which our relay moved the most frames (geometric mean)."""
    scores: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        if r["relay"] == "ours":
            scores.setdefault((r["ws"], r["loop"]), []).append(r["frames_s"])
    return max(scores, key=lambda k: statistics.geometric_mean(scores[k]))


# -- idle agents ---------------------------------------------------------------------------------
def proc_stats(pid: int) -> tuple[float, float]:
    """(RSS in MB, CPU seconds so far) of a process, from /proc."""
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return rss, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def idle_agents(port: int, pid: int, count: int, seconds: float, interval: float
                      ) -> dict[str, Any]:
    _more_files()
    rss0, _ = proc_stats(pid)
    url = f"ws://127.0.0.1:{port}/ws/agent"
    agents: list[ClientConnection] = []
    started = time.perf_counter()
    for i in range(count):
        ws = await connect(url, compression=None)
        await ws.send(wrap("session_request", pb.SessionRequest(
            session_token=SHARED_KEY, agent_id=f"idle-{i}-{uuid.uuid4().hex[:6]}")))
        assert pb.Message.FromString(await ws.recv()).session_response.success
        agents.append(ws)
    connect_s = time.perf_counter() - started

    async def beat(ws: ClientConnection, phase: float) -> None:
        await asyncio.sleep(phase)
        while True:
            await ws.send(wrap("heartbeat", pb.Heartbeat(timestamp=int(time.time() * 1000))))
            await ws.recv()
            await asyncio.sleep(interval)

    tasks = [asyncio.create_task(beat(ws, interval * i / count)) for i, ws in enumerate(agents)]
    await asyncio.sleep(interval)  # every agent has beaten once
    rss1, cpu1 = proc_stats(pid)
    await asyncio.sleep(seconds)
    rss2, cpu2 = proc_stats(pid)
    for task in tasks:
        task.cancel()
    for ws in agents:
        await ws.close()
    return {"agents": count, "connect_s": connect_s, "rss_before_mb": rss0,
            "rss_idle_mb": max(rss1, rss2), "kb_per_agent": (max(rss1, rss2) - rss0) * 1024 / count,
            "cpu_percent": 100 * (cpu2 - cpu1) / seconds, "heartbeat_s": interval,
            "window_s": seconds}


# -- the hot path's per-message cost ---------------------------------------------------------------
def hot_path_costs() -> list[dict[str, Any]]:
    rows = []
    for size in (100_000, 1_000_000):
        data = bytes(make_frame(size)[0])
        conn = Connection(Role.SERVER, Role.AGENT)
        conn.accept("s")
        offset = conn.receive_data(data).offset  # type: ignore[union-attr]
        for what, call in (
            ("video_offset (the relay's fast path)", lambda d=data, c=conn: c.video_offset(d)),
            ("receive_data (the full path, peek)", lambda d=data, c=conn: c.receive_data(d)),
            ("is_keyframe (skipping viewers only)", lambda d=data, o=offset: is_keyframe(d, o)),
            ("full Message parse (avoided)", lambda d=data: pb.Message.FromString(d)),
        ):
            n = 20000 if "parse" not in what else 200
            rows.append({"frame_kb": size // 1000, "operation": what,
                         "us_per_message": timeit.timeit(call, number=n) / n * 1e6})
    return rows


# -- main ---------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small smoke run")
    parser.add_argument("--seconds", type=float, default=2.0, help="per throughput measurement")
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--impls", default=",".join(IMPLS),
                        help="uvicorn WebSocket implementations to measure (comma-separated)")
    parser.add_argument("--loops", default=",".join(LOOPS), help="event loops to measure")
    parser.add_argument("--repeats", type=int, default=3, help="throughput runs per scenario")
    parser.add_argument("--serve-bare", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--serve-hub", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--ws", default="websockets", help=argparse.SUPPRESS)
    parser.add_argument("--loop", default="asyncio", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_bare:
        return serve_bare(args.serve_bare, args.ws, args.loop)
    if args.serve_hub:
        return serve_hub(args.serve_hub)
    impls, loops = tuple(args.impls.split(",")), tuple(args.loops.split(","))
    seconds, agents, window, repeats, paced = args.seconds, args.agents, 30.0, args.repeats, 60
    if args.quick:
        impls, loops, seconds, agents, window = ("websockets-sansio",), ("uvloop",), 0.3, 50, 3.0
        repeats, paced = 1, 20
    shared = ["The machine (2 cores) was shared with other work while this ran; "
              "compare rows of one run, not absolute figures across runs."]
    report("relay_hot_path", hot_path_costs(), title="Per-message cost on the relay's hot path",
           notes=shared)
    rows = run_matrix(impls, loops, seconds, repeats, paced)
    report("relay_throughput", rows, title="Relay throughput and latency (1 agent -> N viewers)",
           notes=[f"frames_s: frames per second each viewer received, at most {WINDOW} in "
                  f"flight, best of {repeats} interleaved runs; mb_s_in/out: agent -> server / "
                  "server -> all viewers; cpu: the server process's CPU time per frame "
                  "(websockify forks per connection: not measured); p50/p99: "
                  f"send -> receive at a paced {PACED_FPS} frames/s.", *shared])
    report("relay_ratios", ratios(rows), title="Ours against the bare relay and websockify",
           notes=["vs_bare: ours / bare Starlette relay under the same ws and loop "
                  "(goal >= 0.95); vs_websockify: ours / websockify; cpu_vs_bare: server CPU "
                  "per frame, ours / bare (lower is better)."])
    ws, loop = fastest(rows)
    with ours(ws, loop) as (port, proc):
        idle = asyncio.run(idle_agents(port, proc.pid, agents, window,
                                       1.0 if args.quick else 15.0))
    report("relay_idle_agents", [{"ws": ws, "loop": loop, **idle}],
           title="Idle agents with heartbeats: server memory and CPU", notes=shared)


if __name__ == "__main__":
    main()

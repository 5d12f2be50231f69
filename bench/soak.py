"""Soak: a real server under churn for a long time; does anything grow or break?

``remote-support serve`` (shipped settings, its own SQLite file) with
``--agents`` keyed agents that beat every 15 s and stream small raw frames
while watched, ``--viewers`` viewers that join and leave, agents that drop
and reconnect, and attended sessions (support code, consent, a viewer, end).
Every ``--every`` seconds the server's RSS and open sockets are
sampled; at the end the log is searched for errors and tracebacks. The
verdict: RSS after warm-up (the first fifth of the run) stays flat, the
sockets return to where they were, the log is clean.

    uv run python -m bench.soak                      # 200 agents, 20 viewers, 30 minutes
    uv run python -m bench.soak --minutes 3          # a short run
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from remote_server.testing.processes import Api, ServerProcess
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from bench.report import report
from remote_core.protocol import pb, wrap

FRAME = pb.RawFrame(width=64, height=32, data=bytes(64 * 32 * 4), is_keyframe=True)


@dataclass
class Counts:
    agents_up: int = 0
    viewers_up: int = 0
    sessions: int = 0
    viewer_joins: int = 0
    reconnects: int = 0
    attended: int = 0
    busy: int = 0
    """Sockets the server closed with 1013 (its cap on sockets still owing their
    SessionRequest, per address): every client here speaks from one address, so a burst
    meets it; the client comes back after a pause, as the agent does."""
    failures: list[str] = field(default_factory=list)

    def failed(self, who: str, exc: BaseException) -> None:
        if isinstance(exc, ConnectionClosed) and exc.rcvd is not None and exc.rcvd.code == 1013:
            self.busy += 1
        else:
            self.failures.append(f"{who}: {exc}")


def message(data: bytes) -> tuple[str, Any]:
    parsed = pb.Message()
    parsed.ParseFromString(data)
    kind = parsed.WhichOneof("payload") or ""
    return kind, getattr(parsed, kind) if kind else None


async def hello(ws: ClientConnection, token: str, agent_id: str = "") -> str:
    await ws.send(wrap("session_request", pb.SessionRequest(
        agent_id=agent_id, session_token=token, client_version="soak")))
    kind, response = message(await ws.recv())
    if kind != "session_response" or not response.success:
        raise RuntimeError(f"refused: {response}")
    return str(response.session_id)


async def serve_agent(ws: ClientConnection, counts: Counts, consent: bool = False) -> None:
    """Beat every 15 s; stream 5 frames/s while anyone watches; grant consent if asked."""
    watchers: set[str] = set()
    sequence = 0

    async def beat() -> None:
        while True:
            await ws.send(wrap("heartbeat", pb.Heartbeat(timestamp=int(time.time() * 1000))))
            await asyncio.sleep(15)

    async def stream() -> None:
        nonlocal sequence
        while True:
            await asyncio.sleep(0.2)
            if watchers:
                sequence += 1
                await ws.send(wrap("video_frame", pb.VideoFrame(sequence=sequence, raw=FRAME)))

    tasks = [asyncio.create_task(beat()), asyncio.create_task(stream())]
    try:
        async for data in ws:  # ends quietly when the socket closes
            kind, payload = message(bytes(data))
            if kind == "start_stream":
                watchers.add(payload.viewer_id)
            elif kind == "stop_stream":
                watchers.discard(payload.viewer_id)
            elif kind == "consent_request" and consent:
                await ws.send(wrap("consent_response", pb.ConsentResponse(
                    session_id=payload.session_id, granted=True)))
    except ConnectionClosed:
        pass
    finally:
        for task in tasks:
            task.cancel()


async def keyed_agent(url: str, key: str, counts: Counts, stop: asyncio.Event) -> None:
    """Connect, serve, and now and then drop the connection and come back."""
    while not stop.is_set():
        try:
            async with connect(f"{url}/ws/agent", max_size=None) as ws:
                await hello(ws, key)
                counts.agents_up += 1
                counts.sessions += 1
                try:
                    await asyncio.wait_for(serve_agent(ws, counts),
                                           timeout=random.uniform(60, 600))
                except TimeoutError:
                    counts.reconnects += 1
                finally:
                    counts.agents_up -= 1
        except (OSError, ConnectionClosed, RuntimeError) as exc:
            counts.failed("agent", exc)
        await asyncio.sleep(random.uniform(1, 3))


async def viewer_loop(url: str, api: Api, counts: Counts, stop: asyncio.Event) -> None:
    """Join a random live session, watch (acking frames) for a while, leave."""
    while not stop.is_set():
        await asyncio.sleep(random.uniform(1, 5))
        live = [s for s in (await asyncio.to_thread(
                    api.get, "/api/sessions", params={"live": "true", "limit": 1000})).json()
                if s["consent_state"] != "pending"]
        if not live:
            continue
        session = random.choice(live)
        token = (await asyncio.to_thread(
            api.post, f"/api/sessions/{session['id']}/viewer-token")).json().get("token")
        if not token:
            continue
        try:
            async with connect(f"{url}/ws/viewer", max_size=None) as ws:
                await hello(ws, token)
                counts.viewers_up += 1
                counts.viewer_joins += 1
                try:
                    await asyncio.wait_for(watch(ws), timeout=random.uniform(5, 30))
                except TimeoutError:
                    pass
                finally:
                    counts.viewers_up -= 1
        except (OSError, ConnectionClosed, RuntimeError) as exc:
            counts.failed("viewer", exc)


async def watch(ws: ClientConnection) -> None:
    async for data in ws:
        kind, payload = message(bytes(data))
        if kind == "video_frame":
            await ws.send(wrap("video_ack", pb.VideoAck(sequence=payload.sequence,
                                                        timestamp=payload.timestamp)))


async def attended_loop(url: str, api: Api, counts: Counts, stop: asyncio.Event) -> None:
    """A support-code session every 20 s: consent, a viewer for 10 s, then the end."""
    while not stop.is_set():
        await asyncio.sleep(20)
        code = (await asyncio.to_thread(api.post, "/api/codes", json={})).json()["code"]
        try:
            async with connect(f"{url}/ws/agent", max_size=None) as ws:
                session_id = await hello(ws, code, agent_id=f"soak-attended-{counts.attended}")
                agent = asyncio.create_task(serve_agent(ws, counts, consent=True))
                await asyncio.sleep(1)
                token = (await asyncio.to_thread(
                    api.post, f"/api/sessions/{session_id}/viewer-token")).json()["token"]
                async with connect(f"{url}/ws/viewer", max_size=None) as viewer:
                    await hello(viewer, token)
                    try:
                        await asyncio.wait_for(watch(viewer), timeout=10)
                    except TimeoutError:
                        pass
                agent.cancel()
                with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
                    await agent
                counts.attended += 1
        except (OSError, ConnectionClosed, RuntimeError, KeyError) as exc:
            counts.failed("attended", exc)


def sample(pid: int) -> tuple[float, int]:
    """The server's RSS (MB) and its open sockets (a leaked connection stays one)."""
    status = Path(f"/proc/{pid}/status").read_text()
    rss_kb = int(next(line.split()[1] for line in status.splitlines()
                      if line.startswith("VmRSS:")))
    sockets = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            sockets += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
    return rss_kb / 1024, sockets


async def soak(args: argparse.Namespace) -> int:
    work = Path(tempfile.mkdtemp(prefix="soak-"))
    server = ServerProcess(work).start()
    assert server.process is not None
    api = Api(server)
    url = server.url.replace("http://", "ws://")
    keys = [api.machine_with_key()[1] for _ in range(args.agents)]
    counts, stop = Counts(), asyncio.Event()
    _, sockets_before = sample(server.process.pid)
    tasks = [asyncio.create_task(keyed_agent(url, key, counts, stop)) for key in keys]
    tasks += [asyncio.create_task(viewer_loop(url, api, counts, stop))
              for _ in range(args.viewers)]
    tasks.append(asyncio.create_task(attended_loop(url, api, counts, stop)))
    rows: list[dict[str, Any]] = []
    started = time.monotonic()
    try:
        while (elapsed := time.monotonic() - started) < args.minutes * 60:
            await asyncio.sleep(args.every)
            rss, sockets = sample(server.process.pid)
            rows.append({"minute": round(elapsed / 60, 1), "rss_mb": round(rss, 1),
                         "sockets": sockets,
                         "agents": counts.agents_up, "viewers": counts.viewers_up,
                         "sessions": counts.sessions, "viewer_joins": counts.viewer_joins,
                         "attended": counts.attended, "busy_1013": counts.busy,
                         "failures": len(counts.failures)})
            print(rows[-1], flush=True)
    finally:
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.sleep(5)
    rss_end, sockets_after = sample(server.process.pid)
    log = server.log.read_text(errors="replace")
    errors = [line for line in log.splitlines() if " ERROR " in line or "Traceback" in line]
    api.close()
    server.stop()
    warm = [r["rss_mb"] for r in rows[len(rows) // 5:]] or [rss_end]
    summary = [
        f"RSS after warm-up: {min(warm):.1f} -> {max(warm):.1f} MB (end {rss_end:.1f} MB)",
        f"server sockets: {sockets_before} before, {sockets_after} after every client left",
        f"errors or tracebacks in the server log: {len(errors)}",
        f"client-side failures: {len(counts.failures)} {counts.failures[:3]}",
        f"busy refusals (1013, come back after a pause): {counts.busy}",
    ]
    report("soak", rows, title=f"Soak: {args.agents} agents, {args.viewers} viewers, "
                               f"{args.minutes} min", notes=summary)
    return 1 if errors or sockets_after > sockets_before + 2 else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=200)
    parser.add_argument("--viewers", type=int, default=20)
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--every", type=float, default=30, help="seconds between samples")
    return asyncio.run(soak(parser.parse_args(argv)))


if __name__ == "__main__":
    raise SystemExit(main())

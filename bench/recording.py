"""Recording benchmark: relay throughput with session recording on, against off, in one run.

The relay benchmark's peers (``bench.relay``: one agent sending raw keyframe messages
as fast as a window of ``WINDOW`` frames to the slowest viewer allows) stream through
``remote-support serve`` three ways, interleaved so the machine's load falls on each
alike: recordings off; on, to the ``recording_files`` store in a temporary folder; on, to
the ``recording_s3`` store on a moto S3 server started here (when that plugin and moto
are installed). Each row gives the frames per second a viewer received, the megabytes a
second recorded, the server's CPU per frame, and the ratio to recordings off.

A second table paces 1 MB frames at fixed rates instead: the rate a store sustains with
its recordings complete (at an unbounded rate every store falls behind and the recording
is cut short, by design, without slowing the viewer).

    uv run python -m bench.recording            # 1 MB and 100 kB frames, 3 repeats
    uv run python -m bench.recording --quick    # a smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx

from bench.relay import (
    _logins,
    free_port,
    ours,
    proc_stats,
    session,
    stream,
    throughput,
    wait_port,
)
from bench.report import report
from remote_core.testing.processes import stop_process

WS, LOOP = "websockets-sansio", "auto"
S3_KEYS = {"AWS_ACCESS_KEY_ID": "bench-key", "AWS_SECRET_ACCESS_KEY": "bench-secret",
           "AWS_DEFAULT_REGION": "us-east-1"}


@contextlib.contextmanager
def moto_s3() -> Iterator[tuple[str, int] | None]:
    """A moto S3 server with a bucket: a recordings URL and the server's pid; None without
    the s3 store."""
    if not (importlib.util.find_spec("remote_recording_s3") and importlib.util.find_spec("moto")):
        yield None
        return
    import boto3

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, **S3_KEYS})
    try:
        wait_port(port, proc)
        endpoint = f"http://127.0.0.1:{port}"
        boto3.client("s3", endpoint_url=endpoint, **_keys()).create_bucket(Bucket="bench")
        yield f"s3://bench/recordings?endpoint={endpoint}&region=us-east-1", proc.pid
    finally:
        stop_process(proc)


def _keys() -> dict[str, str]:
    return {"aws_access_key_id": S3_KEYS["AWS_ACCESS_KEY_ID"],
            "aws_secret_access_key": S3_KEYS["AWS_SECRET_ACCESS_KEY"],
            "region_name": S3_KEYS["AWS_DEFAULT_REGION"]}


def modes(s3: tuple[str, int] | None) -> dict[str, dict[str, str]]:
    found = {"off": {},
             "files": {"REMOTE_SUPPORT_RECORDINGS": "on",
                       "REMOTE_SUPPORT_RECORDINGS_URL": "file://{TMP}/recordings"}}
    if s3 is not None:
        found["s3"] = {"REMOTE_SUPPORT_RECORDINGS": "on", "REMOTE_SUPPORT_RECORDINGS_URL": s3[0],
                       **S3_KEYS}
    return found


def measure(mode_env: dict[str, str], size: int, seconds: float, store_pid: int | None
            ) -> tuple[float, float, float, float, str]:
    """Frames/s and server CPU per frame, the CPU seconds the S3 server (``store_pid``)
    took meanwhile, then what was recorded: megabytes in the store, and each recording's
    state (a store that fell behind cut it short)."""
    with ours(WS, LOOP, **mode_env) as (port, proc):
        before = proc_stats(store_pid)[1] if store_pid else 0.0
        fps, cpu = asyncio.run(throughput("ours", port, 1, size, seconds, proc.pid))
        store_cpu = proc_stats(store_pid)[1] - before if store_pid else 0.0
        if not mode_env:
            return fps, cpu, store_cpu, 0.0, "-"
        return (fps, cpu, store_cpu, *recorded(port))


def recorded(port: int) -> tuple[float, str]:
    """Megabytes the server's recordings hold, and their states, once every one ended
    (the last may still be writing what it queued: at most 30 s, FLUSH_TIMEOUT)."""
    deadline = time.monotonic() + 40
    while True:
        rows = httpx.get(f"http://127.0.0.1:{port}/api/recordings", timeout=30, headers={
            "Authorization": f"Bearer {_logins[port]}"}).json()
        if all(r["state"] != "recording" for r in rows) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    states = ", ".join(sorted({r["state"] for r in rows})) or "none"
    return sum(r["bytes"] for r in rows) / 1e6, states


def sustained(mode_env: dict[str, str], size: int, fps: float, seconds: float
              ) -> tuple[float, float, float, str]:
    """Frames paced at ``fps`` for ``seconds``: megabytes sent, the rate the viewer
    received them at, and what was recorded (megabytes, states)."""
    frames = max(10, int(fps * seconds))

    async def run(port: int) -> float:
        async with session("ours", port, 1) as s:
            elapsed, _ = await stream(s, size, frames, fps)
        return frames / elapsed

    with ours(WS, LOOP, **mode_env) as (port, _proc):
        got = asyncio.run(run(port))
        return (frames * size / 1e6, got * size / 1e6, *recorded(port))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small smoke run")
    parser.add_argument("--seconds", type=float, default=4.0, help="per measurement")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved runs per row")
    parser.add_argument("--paced-only", action="store_true", help="only the paced table")
    args = parser.parse_args(argv)
    seconds, repeats, sizes = args.seconds, args.repeats, (1_000_000, 100_000)
    if args.quick:
        seconds, repeats, sizes = 0.5, 1, (1_000_000,)
    if args.paced_only:
        sizes = ()
    rows: list[dict[str, Any]] = []
    with moto_s3() as s3:
        kinds = modes(s3)
        for size in sizes:
            best: dict[str, tuple[float, float, float, float, str]] = {}
            for _ in range(repeats):
                for name, env in kinds.items():
                    got = measure(env, size, seconds, s3[1] if s3 else None)
                    if got[0] > best.get(name, (0.0,))[0]:
                        best[name] = got
                    time.sleep(0.5)
            for name, (fps, cpu, store_cpu, held, states) in best.items():
                rows.append({"frame_bytes": size, "recording": name, "frames_s": fps,
                             "mb_s": fps * size / 1e6, "cpu_us_frame": cpu,
                             "vs_off": fps / best["off"][0], "s3_cpu_s": store_cpu,
                             "recorded_mb": held, "state": states})
    paced: list[dict[str, Any]] = []
    with moto_s3() as s3:
        stores = {name: env for name, env in modes(s3).items() if env}
        for fps in (10,) if args.quick else (50, 100, 200, 400):
            for name, env in stores.items():
                sent, got, held, states = sustained(env, 1_000_000, fps, seconds)
                paced.append({"recording": name, "paced_mb_s": fps, "received_mb_s": got,
                              "sent_mb": sent, "recorded_mb": held, "state": states})
                time.sleep(0.5)
    if rows:
        report("recording", rows, title="Relay throughput with recording on against off "
                                        "(1 agent -> 1 viewer)",
               notes=[f"frames_s: best of {repeats} interleaved runs of {seconds:g} s; mb_s: "
                      "what the viewer received (and the recording wrote); cpu_us_frame: the "
                      "server's CPU time per frame; vs_off: frames_s over recordings off (goal "
                      ">= 0.9 at 1 MB frames); s3_cpu_s: CPU seconds the moto S3 server took "
                      "meanwhile (beside the server, on the same cores); recorded_mb: what the "
                      "recordings hold; state: incomplete when the store fell behind and the "
                      "recording was cut short.",
                      "The machine (2 cores) runs the server, the peers, and for s3 the moto "
                      "server beside them."])
    report("recording_sustained", paced, title="Recording at a paced rate (1 MB frames, "
                                               "1 agent -> 1 viewer)",
           notes=[f"Each row sends {seconds:g} s of 1 MB frames paced at paced_mb_s; "
                  "received_mb_s: what the viewer got; recorded_mb against sent_mb: what the "
                  "recording holds; state: complete when the store kept up."])


if __name__ == "__main__":
    main()

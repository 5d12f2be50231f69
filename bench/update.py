"""Agent self-update benchmark: how long each step takes with a real build over local HTTPS.

Builds 1.0.0 and 1.0.1 with ``remote-support release build``, serves 1.0.1
from a local HTTPS host with a test CA, and runs the agent's updater over a
copy of 1.0.0, unsigned and with a pinned publisher key, timing each
reported step (median of ``--runs``). Also the cost a single-file build adds
to starting the agent (``--version``; zipimport keeps no bytecode cache).

    uv run python -m bench.update
"""

from __future__ import annotations

import argparse
import base64
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from remote_agent.config import AgentConfig
from remote_agent.update import Offer, Updater
from remote_server.release import build_agent

from bench.report import report
from remote_core.protocol import pb
from remote_core.testing.release_server import ReleaseServer, Route

STEPS = ("UPDATE_CHECKING", "UPDATE_DOWNLOADING", "UPDATE_VERIFYING", "UPDATE_INSTALLING",
         "UPDATE_RESTARTING")


async def one_update(work: Path, old: Path, offer: Offer, config: AgentConfig) -> dict[str, float]:
    """Milliseconds spent in each step (until the next one is reported)."""
    target = work / "agent" / "remote-agent.pyz"
    shutil.rmtree(target.parent, ignore_errors=True)
    target.parent.mkdir(parents=True)
    shutil.copy(old, target)
    seen: dict[str, float] = {}

    async def record(status: Any) -> None:
        seen.setdefault(pb.UpdateState.Name(status.state), time.perf_counter())

    start = time.perf_counter()
    assert await Updater(config, target, current="1.0.0").run(offer, record)
    times = [start] + [seen[s] for s in STEPS[1:]]
    spent = {s: (b - a) * 1000 for s, a, b in zip(STEPS, times, times[1:], strict=False)}
    spent["total"] = (seen["UPDATE_RESTARTING"] - start) * 1000
    return spent


def startup_ms(argv: list[str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main(runs: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)
        start = time.perf_counter()
        new = build_agent(work / "remote-agent-1.0.1.pyz", "1.0.1")
        build_ms = (time.perf_counter() - start) * 1000
        old = build_agent(work / "remote-agent-1.0.0.pyz", "1.0.0")
        key = Ed25519PrivateKey.generate()
        public = base64.b64encode(key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw)).decode()
        body = new.path.read_bytes()
        with ReleaseServer(work / "host") as host:
            url = host.publish("remote-agent-1.0.1.pyz", Route(body))
            host.publish("remote-agent-1.0.1.pyz.sig", Route(base64.b64encode(key.sign(body))))
            offer = Offer("1.0.1", url, new.sha256)
            plain = AgentConfig(ca_bundle=str(host.ca_bundle))
            signed = AgentConfig(ca_bundle=str(host.ca_bundle), update_public_key=public)
            results = {name: [anyio.run(one_update, work, old.path, offer, config)
                              for _ in range(runs)]
                       for name, config in (("unsigned", plain), ("signed", signed))}
        rows: list[dict[str, Any]] = [
            {"step": step.removeprefix("UPDATE_").lower(),
             **{f"{name} ms": statistics.median(r[step] for r in samples)
                for name, samples in results.items()}}
            for step in (*STEPS[:-1], "total")]
        report("update", rows, title=f"Agent self-update, median of {runs} "
               f"({len(body) / 1024:.0f} KiB build)", notes=[
                   f"build ({new.path.name}): {build_ms:.0f} ms",
                   "verifying includes starting the new build once with --version",
                   "agent start to --version: single-file build "
                   f"{startup_ms([sys.executable, str(new.path), '--version'], runs):.0f} ms, "
                   "installed package "
                   f"{startup_ms([sys.executable, '-m', 'remote_agent', '--version'], runs):.0f}"
                   " ms"])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    main(parser.parse_args().runs)

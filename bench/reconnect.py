"""Reconnect benchmark: a fleet of agents comes back after the server restarts.

A real ``remote-support serve`` (its own SQLite file, the shared key switched
on so the agents need no keys) and ``--agents`` real agents in this process
(:mod:`remote_agent.fleet`: the agent's own session, reconnect loop and
backoff; each from its own loopback address, as a fleet of machines would be,
unless ``--one-address``). Once all are connected the server is stopped (SIGTERM) and started
again; every reconnection attempt and every accepted connection is timed.
The table gives, per 100 ms window from the restart to the last agent back,
the peak and median attempts and connections, the bound the backoff policy's
jitter puts on the peak attempts once the server is back
(``remote_agent.fleet.herd_bound``), and the
time until every agent was online again. For comparison, ``--compare`` runs
the same fleet once more with the jitter taken out (every delay at its
ceiling), which is the thundering herd the jitter exists to prevent.

    uv run python -m bench.reconnect                      # 1,000 agents, with and without jitter
    uv run python -m bench.reconnect --agents 200 --no-compare   # a short run
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from remote_agent.backoff import Backoff
from remote_agent.fleet import Fleet, herd_bound, per_window, raise_fd_limit
from remote_server.testing.liveserver import eventually
from remote_server.testing.processes import ServerProcess
from remote_store_sql.testing import sqlite_database

from bench.report import report

SHARED_KEY = "bench-reconnect-shared-key"
WINDOW = 0.1



def percentile50(counts: list[int]) -> float:
    return float(statistics.median(counts)) if counts else 0.0


async def one_run(agents: int, ramp: float, jitter: bool, workdir: Path, *,
                  spread: bool = True) -> dict[str, Any]:
    def make_backoff() -> Backoff:
        return Backoff() if jitter else Backoff(rand=lambda: 1.0)

    server = ServerProcess(workdir, shared_agent_key=SHARED_KEY).start()
    try:
        fleet = Fleet(server.url, SHARED_KEY, agents, ramp=ramp, make_backoff=make_backoff,
                      spread=spread)
        async with anyio.create_task_group() as group:
            began = time.monotonic()
            group.start_soon(fleet.run)
            await eventually(lambda: fleet.online() == agents, ramp + 300, "the fleet connected")
            first_online = max(a.connections[0] for a in fleet.agents) - began
            restart = time.monotonic()
            await anyio.to_thread.run_sync(server.stop)  # the fleet runs on meanwhile
            stopped = time.monotonic()
            await anyio.to_thread.run_sync(server.start)
            healthy = time.monotonic()
            await eventually(lambda: all(a.online and a.connections[-1] > restart
                                         for a in fleet.agents), 600, "every agent came back")
            back = time.monotonic()
            group.cancel_scope.cancel()
    finally:
        server.stop()
    attempts = per_window(fleet.attempts_since(restart), restart, WINDOW)
    after_up = fleet.attempts_since(healthy)
    connections = per_window(fleet.connections_since(restart), restart, WINDOW)
    retries = max(sum(t > restart for t in a.attempts) for a in fleet.agents)
    rows = sqlite_database(workdir, "server.db").execute(
        "SELECT count(*), count(DISTINCT agent_id) FROM machines")[0]
    last = max(a.connections[-1] for a in fleet.agents)
    return {
        "agents": agents, "jitter": jitter, "addresses": agents if spread else 1,
        "ramp_s": ramp, "first_all_online_s": first_online,
        "server_down_s": healthy - restart, "stop_s": stopped - restart,
        "attempts": sum(attempts), "retries_max": retries,
        "attempts_peak_100ms": max(attempts), "attempts_p50_100ms": percentile50(attempts),
        "attempts_after_up_peak_100ms": max(per_window(after_up, healthy, WINDOW), default=0),
        "after_up_bound_100ms": herd_bound(Backoff(), [a.attempts for a in fleet.agents],
                                           restart, healthy, WINDOW),
        "connections_peak_100ms": max(connections), "connections_p50_100ms":
            percentile50(connections),
        "all_online_s": last - restart, "all_online_after_up_s": last - healthy,
        "observed_s": back - restart, "machine_rows": rows[0],
        "duplicate_rows": rows[0] - rows[1],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--ramp", type=float, default=20.0,
                        help="seconds over which the fleet first connects")
    parser.add_argument("--no-compare", dest="compare", action="store_false",
                        help="skip the run without jitter")
    parser.add_argument("--one-address", dest="spread", action="store_false",
                        help="every agent from 127.0.0.1 (behind one NAT), which the cap on "
                             "pending sockets per address throttles")
    args = parser.parse_args(argv)
    raise_fd_limit(4 * args.agents + 1024)
    rows = []
    for jitter in (True, False) if args.compare else (True,):
        with tempfile.TemporaryDirectory() as tmp:
            rows.append(anyio.run(partial(one_run, args.agents, args.ramp, jitter, Path(tmp),
                                         spread=args.spread)))
    report("reconnect", rows, title="Agents reconnecting after a server restart",
           notes=["Counts are per 100 ms window from the restart (SIGTERM) to the last agent "
                  "back, empty windows included in the medians. after_up_bound_100ms: the "
                  "most attempts in one window after the new server answered that the "
                  "shipped backoff's jitter allows (herd_bound, 5 sigma); jitter=False "
                  "takes the jitter out (every delay at "
                  "its ceiling) to show the herd it prevents. attempts_after_up: attempts "
                  "once the new server answered /healthz. all_online_s: restart to the last "
                  "agent's accepted session. first_all_online_s: from the fleet's start to "
                  "its last agent's first accepted session (--ramp 0: all at once, a storm "
                  "on a running server).",
                  "One process runs every agent; the machine (2 cores) was shared with "
                  "other work while this ran: compare rows of one run, not absolute figures "
                  "across runs."])


if __name__ == "__main__":
    main()

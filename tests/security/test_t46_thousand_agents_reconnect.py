"""T46: a server with 1,000 agents restarts; they come back spread by their jitter.

A real ``remote-support serve`` process and 1,000 real agents in this process
(:mod:`remote_agent.fleet`: the agent's own session, reconnect loop and
:class:`Backoff`). The server is stopped (SIGTERM: every agent is told
``Disconnect``) and started again on the same database. Every agent must
come back by itself, as one machine row each, with no session left open.

What keeps them from coming back as a herd is asserted where it is decided:
every agent, told the server is going away, waited a delay its own backoff
drew before it tried again (none reconnected at once), and those first
delays are spread by the jitter, not one value for all. The wall-clock rate
of attempts is measured, not asserted, by ``bench/reconnect.py`` (with and
without jitter): on a loaded machine the server's own seconds-long shutdown
and one event loop running every agent blur it too much to tell the two
apart by a bound.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import anyio
import pytest
from remote_agent.fleet import Fleet, RecordingBackoff, raise_fd_limit
from remote_server.testing.liveserver import eventually
from remote_server.testing.processes import ServerProcess
from remote_store_sql.testing import sqlite_database

from .conftest import SHARED_KEY

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(900)]

AGENTS = 1000
RAMP = 20.0
"""Seconds over which the fleet first connects (an installed fleet was not born at once)."""



async def test_t46_a_thousand_agents_come_back_by_themselves_after_a_restart(
        tmp_path: Path) -> None:
    raise_fd_limit(4 * AGENTS + 1024)  # both ends of every socket; the server inherits it
    server = ServerProcess(tmp_path / "server", shared_agent_key=SHARED_KEY).start()
    try:
        # Each agent from its own loopback address, as a fleet of machines: from one
        # address the per-address cap on pending sockets (T36) would throttle them.
        fleet = Fleet(server.url, SHARED_KEY, AGENTS, ramp=RAMP, spread=True)
        async with anyio.create_task_group() as group:
            group.start_soon(fleet.run)
            await eventually(lambda: fleet.online() == AGENTS, RAMP + 240, "the fleet connected")

            restart = time.monotonic()
            await anyio.to_thread.run_sync(server.stop)  # the fleet runs on meanwhile
            await anyio.to_thread.run_sync(server.start)
            await eventually(lambda: all(a.online and a.connections[-1] > restart
                                         for a in fleet.agents), 300, "every agent came back")
            group.cancel_scope.cancel()
    finally:
        server.stop()

    first_waits = []
    for agent in fleet.agents:
        back = min(t for t in agent.attempts if t > restart)
        assert isinstance(agent.backoff, RecordingBackoff)
        drawn = [(t, delay) for t, delay in agent.backoff.drawn if restart <= t <= back]
        assert drawn, f"agent {agent.index} tried again without drawing a delay"
        when, delay = drawn[0]
        assert delay >= agent.backoff.base / 2
        assert min(t for t in agent.attempts if t > when) - when >= delay * 0.99
        first_waits.append(delay)
    # Full jitter draws the first wait uniformly from [base/2, base]: about 0.14 s of
    # spread for a 1 s base; without jitter every agent would wait the same.
    assert statistics.pstdev(first_waits) > 0.05, first_waits[:20]

    db = sqlite_database(server.workdir, "server.db")
    assert db.execute("SELECT count(*), count(DISTINCT agent_id) FROM machines") == [
        (AGENTS, AGENTS)]
    assert db.execute("SELECT count(*) FROM sessions WHERE ended_at IS NULL") == [(0,)]

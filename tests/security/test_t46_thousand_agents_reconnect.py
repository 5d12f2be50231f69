"""T46: a server with 1,000 agents restarts; they come back spread by their jitter.

A real ``remote-support serve`` process and 1,000 real agents in this process
(:mod:`remote_agent.fleet`: the agent's own session, reconnect loop and
:class:`Backoff`). The server is stopped (SIGTERM: every agent is told
``Disconnect``) and started again on the same database. Every agent must
come back by itself, as one machine row each, with no session left open.

How the attempts spread is measured, not asserted: ``bench/reconnect.py``
runs the same fleet with and without jitter. An assertion of the spread
(:func:`remote_agent.fleet.herd_bound`) did not tell the two apart here:
the server's own shutdown, seconds long under 1,000 sockets on a loaded
machine, already spreads the disconnections, and one event loop running
every agent bunches attempts when it wakes late.
How fast they come back is measured by ``bench/reconnect.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from remote_agent.fleet import Fleet, raise_fd_limit
from remote_store_sql.testing import sqlite_database

from remote_core.testing.processes import ServerProcess

from .conftest import SHARED_KEY

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(900)]

AGENTS = 1000
RAMP = 20.0
"""Seconds over which the fleet first connects (an installed fleet was not born at once)."""


async def until(check: Callable[[], bool], within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within:g} s: {what}")
        await anyio.sleep(0.2)


async def test_t46_a_thousand_agents_come_back_by_themselves_after_a_restart(
        tmp_path: Path) -> None:
    raise_fd_limit(4 * AGENTS + 1024)  # both ends of every socket; the server inherits it
    server = ServerProcess(tmp_path / "server", shared_agent_key=SHARED_KEY).start()
    try:
        fleet = Fleet(server.url, SHARED_KEY, AGENTS, ramp=RAMP)
        async with anyio.create_task_group() as group:
            group.start_soon(fleet.run)
            await until(lambda: fleet.online() == AGENTS, RAMP + 240, "the fleet connected")

            restart = time.monotonic()
            await anyio.to_thread.run_sync(server.stop)  # the fleet runs on meanwhile
            await anyio.to_thread.run_sync(server.start)
            await until(lambda: all(a.online and a.connections[-1] > restart
                                    for a in fleet.agents), 300, "every agent came back")
            group.cancel_scope.cancel()
    finally:
        server.stop()

    db = sqlite_database(server.workdir, "server.db")
    assert db.execute("SELECT count(*), count(DISTINCT agent_id) FROM machines") == [
        (AGENTS, AGENTS)]
    assert db.execute("SELECT count(*) FROM sessions WHERE ended_at IS NULL") == [(0,)]

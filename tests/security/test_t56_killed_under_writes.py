"""T56, the hard way: the server is SIGKILLed while agents connect and report, then restarted.

A real ``remote-support serve`` process and a fleet of real agents
(:mod:`remote_agent.fleet`: the agent's own session and reconnect loop, one
process for all of them) reporting their status every 100 ms, so writes are
in flight when the kill lands. After the restart on the same database (SQLite
and PostgreSQL) the records must be consistent: no session left open for the
dead server, no machine left "online" that nobody reconnects, no duplicate
machine, and every agent back by its own backoff.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import anyio
import pytest
from remote_agent.fleet import Fleet
from remote_agent.session import Timing
from remote_server.testing.liveserver import eventually
from remote_server.testing.processes import Api, ServerProcess
from remote_store_sql.testing import Database, postgres_database, sqlite_database

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

AGENTS = 12
SWITCHED_OFF = 0
"""The fleet agent stopped while the server is dead: its machine must not stay "online"."""


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "sqlite":
        yield sqlite_database(tmp_path)
    else:
        with postgres_database("t56_killed") as db:
            yield db



async def test_t56_a_server_killed_under_writes_restarts_consistent_and_every_agent_returns(
        database: Database, tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "server", database_url=database.url).start()
    try:
        with closing(Api(server)) as api:
            machines = [api.machine_with_key() for _ in range(AGENTS)]
        fleet = Fleet(server.url, [key for _, key in machines], AGENTS,
                      agent_ids=[agent_id for agent_id, _ in machines],
                      timing=Timing(status=0.1, displays=3600.0), ramp=1.0)
        async with anyio.create_task_group() as group:
            group.start_soon(fleet.run)
            await eventually(lambda: fleet.online() == AGENTS, 60, "every agent connected")
            await eventually(lambda: len(database.execute(
                     "SELECT agent_id FROM machines WHERE hostname IS NOT NULL")) == AGENTS, 30,
                     "every agent's status written")
            await anyio.sleep(1.0)  # status writes keep coming, ten a second per agent

            assert server.process is not None
            server.process.kill()
            server.process.wait()
            fleet.stop(SWITCHED_OFF)
            killed = time.monotonic()
            left_open = {sid for (sid,) in database.execute(
                "SELECT id FROM sessions WHERE ended_at IS NULL")}
            left_online = database.execute("SELECT agent_id FROM machines WHERE status = 'online'")
            assert len(left_open) == AGENTS and len(left_online) == AGENTS  # the dead server's

            await anyio.to_thread.run_sync(server.start)  # the fleet runs on meanwhile
            back = [a for a in fleet.agents if a.index != SWITCHED_OFF]
            await eventually(lambda: all(a.online and a.connections[-1] > killed for a in back), 60,
                             "every agent reconnected by itself")

            # Start-up closed what the dead server left open; only the new sessions are open.
            open_now = {sid for (sid,) in database.execute(
                "SELECT id FROM sessions WHERE ended_at IS NULL")}
            assert open_now == {a.session_id for a in back}
            for (reason,) in database.execute(
                    "SELECT end_reason FROM sessions WHERE id IN ("
                    + ", ".join(["%s"] * len(left_open)) + ")", tuple(left_open)):
                assert reason == "the server stopped"
            # One row per machine; online exactly where an agent is connected.
            rows = dict(database.execute("SELECT agent_id, status FROM machines"))
            assert len(rows) == AGENTS
            switched_off = fleet.agents[SWITCHED_OFF].config.agent_id
            assert rows == {a.config.agent_id: "online" for a in back} | {switched_off: "offline"}
            with closing(Api(server)) as api:
                listed = {m["agent_id"]: m["status"] for m in api.get("/api/machines").json()}
            assert listed == rows
            if database.kind == "sqlite":
                assert database.execute("PRAGMA integrity_check") == [("ok",)]
            group.cancel_scope.cancel()
    finally:
        server.stop()

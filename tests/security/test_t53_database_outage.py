"""T53: the database goes away under a running server, then comes back.

The test database is made unreachable the way an outage looks to the
server (new connections refused, open ones terminated) without stopping
the shared PostgreSQL service, then let back in.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from remote_store_sql.testing import postgres_database

from remote_core.protocol import pb
from remote_core.testing.liveserver import assert_problem, eventually, live_server
from remote_core.testing.services import POSTGRES_ADMIN_URL

from .conftest import Admin, Peer, relay_settings

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


@contextmanager
def outage(database: str) -> Iterator[None]:
    """``database`` refuses new connections and loses its open ones, until the block ends."""
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS false'.encode())
        conn.execute(b"SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                     b"WHERE datname = %s AND pid <> pg_backend_pid()", (database,))
    try:
        yield
    finally:
        with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS true'.encode())


async def test_t53_heartbeats_go_on_the_api_says_503_and_writes_resume(tmp_path: Path) -> None:
    with postgres_database("security_outage") as database, live_server(
            relay_settings(tmp_path, database_url=database.url)) as server:
        admin = Admin(server)
        agent_id, key = admin.keyed_machine()
        agent = await Peer.agent(server, key)
        await agent.accepted()
        name = database.url.rsplit("/", 1)[1]
        with outage(name):
            for beat in range(3):
                await agent.send("heartbeat", pb.Heartbeat(timestamp=beat))
                assert (await agent.expect("heartbeat_ack")).client_timestamp == beat
            # What needs the database says so, in the API's one error shape.
            for method, path in (("GET", "/api/machines"), ("POST", "/api/machines")):
                r = admin.http.request(method, path, json={})
                assert_problem(r, 503, "database")
                assert "Traceback" not in r.text and "psycopg" not in r.text.lower()
            assert_problem(admin.http.get("/readyz"), 503)
            # A report the store cannot take does not cost the agent its socket.
            await agent.send("agent_status", pb.AgentStatus(hostname="during-outage"))
            await agent.send("heartbeat", pb.Heartbeat(timestamp=9))
            assert (await agent.expect("heartbeat_ack")).client_timestamp == 9
        await eventually(lambda: admin.http.get("/api/machines").status_code == 200, wait=20)
        created = admin.ok("POST", "/api/machines", 201, json={"organization": "after"})
        assert admin.ok("GET", f"/api/machines/{created['agent_id']}")["organization"] == "after"
        assert admin.ok("GET", f"/api/machines/{agent_id}")["status"] == "online"
        await agent.send("heartbeat", pb.Heartbeat(timestamp=10))
        assert (await agent.expect("heartbeat_ack")).client_timestamp == 10

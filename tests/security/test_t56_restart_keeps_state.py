"""T56: what a restart must keep, and what it must keep hidden.

tests/test_restart.py restarts a real process and finds users, machines and
keys again; here the same database outlives a server with soft-deleted
machines and sessions, releases and audit rows, and none of the deleted
comes back into a list, a get or a connection.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from remote_server.testing.liveserver import LiveServer, live_server
from remote_store_sql.testing import postgres_database

from .conftest import Admin, Peer, relay_settings

pytestmark = pytest.mark.anyio


@contextmanager
def database_url(kind: str, path: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{path / 'restart.db'}"
    else:
        with postgres_database("security_restart") as database:
            yield database.url


async def refused(server: LiveServer, key: str) -> str:
    agent = await Peer.agent(server, key)
    response = await agent.response()
    await agent.close()
    return "" if response.success else str(response.error)


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgresql",
                                                         marks=pytest.mark.postgres)])
async def test_t56_soft_deletes_releases_and_audit_rows_survive_a_restart(
        tmp_path: Path, kind: str) -> None:
    with database_url(kind, tmp_path) as url:
        settings = relay_settings(tmp_path, database_url=url)
        with live_server(settings) as first:
            admin = Admin(first)
            kept, kept_key = admin.keyed_machine()
            purged, purged_key = admin.keyed_machine()
            agent = await Peer.agent(first, kept_key)
            kept_session = await agent.accepted()
            await agent.close()
            gone = await Peer.agent(first, purged_key)
            purged_session = await gone.accepted()
            admin.ok("DELETE", f"/api/machines/{purged}", params={"purge": "true"})
            admin.ok("DELETE", f"/api/sessions/{purged_session}", params={"purge": "true"})
            admin.ok("POST", "/api/releases", 201, json={
                "version": "4.5.6", "checksum_sha256": "ab" * 32,
                "download_url": "https://dl.example.com/agent-4.5.6.pyz"})
            before = {(e["kind"], e["target"], e["session_id"])
                      for e in admin.ok("GET", "/api/events", params={"limit": 500})}
        with live_server(settings) as second:
            admin = Admin(second)
            listed = {m["agent_id"] for m in admin.ok("GET", "/api/machines")}
            assert kept in listed and purged not in listed
            admin.ok("GET", f"/api/machines/{purged}", 404)
            admin.ok("GET", f"/api/sessions/{purged_session}", 404)
            assert purged_session not in {s["id"] for s in admin.ok("GET", "/api/sessions")}
            assert admin.ok("GET", f"/api/sessions/{kept_session}")["live"] is False
            assert admin.ok("GET", "/api/version")["version"] == "4.5.6"
            after = {(e["kind"], e["target"], e["session_id"])
                     for e in admin.ok("GET", "/api/events", params={"limit": 500})}
            assert before <= after, sorted(before - after)
            assert ("machine.purged", purged, None) in after
            # The purged machine stays out; the kept one comes back with its key.
            assert await refused(second, purged_key) == "unknown or revoked agent key"
            admin.ok("GET", f"/api/machines/{purged}", 404)
            assert await refused(second, kept_key) == ""

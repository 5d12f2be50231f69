"""T53: PostgreSQL stops for 30 s under live sessions, then starts again.

A private cluster (:mod:`remote_server.testing.postgres_cluster`) is really
stopped (``pg_ctl stop -m fast``: open connections cut, new ones refused)
and started again; the server is never restarted. Meanwhile an agent streams
to a viewer, and the things whose records matter happen: a status report, a
session that ends, a viewer that leaves, a machine that goes offline, a new
agent that tries to connect.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from remote_server.testing.liveserver import assert_problem, eventually, live_server
from remote_server.testing.postgres_cluster import PrivatePostgres
from remote_store_sql.testing import Database

from remote_core.protocol import pb

from .conftest import Admin, Peer, relay_settings

pytestmark = [pytest.mark.anyio, pytest.mark.postgres, pytest.mark.slow]

OUTAGE = 30.0
"""Seconds the database is away (the catalogue's figure)."""

QUIET = frozenset({"heartbeat_ack", "start_stream", "stop_stream"})


def frame(sequence: int) -> Any:
    return pb.VideoFrame(timestamp=sequence, sequence=sequence, display_id=1, raw=pb.RawFrame(
        width=4, height=4, data=bytes([sequence % 256]) * 64, is_keyframe=True))


async def relay_once(agent: Peer, viewer: Peer, sequence: int) -> None:
    """One frame from the agent reaches the viewer; one heartbeat of each is answered."""
    await agent.send("video_frame", frame(sequence))
    assert (await viewer.expect("video_frame", skip=QUIET)).sequence == sequence
    for peer in (agent, viewer):
        await peer.send("heartbeat", pb.Heartbeat(timestamp=sequence))
        ack = await peer.expect("heartbeat_ack", skip=QUIET - {"heartbeat_ack"})
        assert ack.client_timestamp == sequence


def row(db: Database, sql: str, *params: Any) -> tuple[Any, ...]:
    rows = db.execute(sql, params)
    assert len(rows) == 1, rows
    return rows[0]


async def test_t53_live_sessions_survive_a_30_s_outage_and_no_write_is_lost(
        tmp_path: Path, private_postgres: PrivatePostgres) -> None:
    db = Database("postgresql", private_postgres.url)
    with live_server(relay_settings(tmp_path, database_url=private_postgres.url)) as server:
        admin = Admin(server)
        agent_id, key = admin.keyed_machine()
        agent = await Peer.agent(server, key)
        session_id = await agent.accepted()
        viewer = await Peer.viewer(server, admin.viewer_token(session_id))
        await viewer.accepted()
        leaving_viewer = await Peer.viewer(server, admin.viewer_token(session_id))
        await leaving_viewer.accepted()
        leaving_id, leaving_key = admin.keyed_machine()
        leaving = await Peer.agent(server, leaving_key)
        leaving_session = await leaving.accepted()
        late_id, late_key = admin.keyed_machine()
        await relay_once(agent, viewer, 0)

        private_postgres.stop()
        stopped = time.monotonic()
        # What needs the database says so, in the API's one error shape.
        assert_problem(admin.http.get("/readyz"), 503)
        for method, path in (("GET", "/api/machines"), ("POST", "/api/machines")):
            r = admin.http.request(method, path, json={})
            assert_problem(r, 503, "database")
            assert "Traceback" not in r.text and "asyncpg" not in r.text.lower()
        # The writes that matter, while the database is away.
        await agent.send("agent_status", pb.AgentStatus(hostname="reported-in-the-outage"))
        await leaving.send("disconnect", pb.Disconnect(reason="done for the day"))
        await leaving_viewer.close()
        # A new agent is told to come back later, not that its key is wrong.
        late = await Peer.agent(server, late_key)
        refusal = await late.response()
        assert not refusal.success and "database" in refusal.error and "retry" in refusal.error
        await late.close()
        # The live relay goes on for the whole outage: frames and heartbeats.
        sequence = 1
        while time.monotonic() - stopped < OUTAGE:
            await relay_once(agent, viewer, sequence)
            sequence += 1
            await anyio.sleep(0.25)
        assert_problem(admin.http.get("/readyz"), 503)

        private_postgres.start()
        await eventually(lambda: admin.http.get("/readyz").status_code == 200, wait=30)
        # Every write made during the outage reaches the database, without a restart.
        await eventually(lambda: row(db, "SELECT hostname, status FROM machines WHERE "
                                         "agent_id = %s", agent_id)
                         == ("reported-in-the-outage", "online"), wait=30)
        await eventually(lambda: row(db, "SELECT status FROM machines WHERE agent_id = %s",
                                     leaving_id) == ("offline",), wait=30)
        ended, reason = row(db, "SELECT ended_at, end_reason FROM sessions WHERE id = %s",
                            leaving_session)
        assert ended is not None and "done for the day" in reason
        kinds = [k for (k,) in db.execute("SELECT kind FROM session_events WHERE "
                                          "session_id = %s ORDER BY id", (leaving_session,))]
        assert kinds == ["session.opened", "session.closed"], kinds
        viewer_kinds = [k for (k,) in db.execute(
            "SELECT kind FROM session_events WHERE session_id = %s ORDER BY id", (session_id,))]
        assert viewer_kinds.count("viewer.joined") == 2 and "viewer.left" in viewer_kinds
        # The live session never noticed; the API and new agents are served again.
        await relay_once(agent, viewer, sequence)
        assert admin.ok("GET", f"/api/machines/{agent_id}")["status"] == "online"
        created = admin.ok("POST", "/api/machines", 201, json={"organization": "after"})
        assert admin.ok("GET", f"/api/machines/{created['agent_id']}")["organization"] == "after"
        late = await Peer.agent(server, late_key)
        await late.accepted()
        assert row(db, "SELECT status FROM machines WHERE agent_id = %s", late_id) == ("online",)
        for peer in (late, viewer, agent):
            await peer.close()

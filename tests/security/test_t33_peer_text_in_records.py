"""T33: text an agent chose reaches the session and audit records as text, never as control.

An attended agent is run by an untrusted end user, so every string it sends is
hostile: the ``reason`` of a ``Disconnect`` or a denying ``ConsentResponse``
becomes the session's ``end_reason``, and an ``UpdateStatus`` goes into the
audit log. On PostgreSQL a NUL in any of them used to fail the write, so the
session never got its end recorded and its machine stayed "online"; elsewhere
control characters were stored and served back to the console.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from remote_server.testing.liveserver import LiveServer, eventually, live_server
from remote_store_sql.testing import postgres_database

from remote_core.protocol import pb

from .conftest import Admin, Peer, relay_settings

pytestmark = pytest.mark.anyio

HOSTILE = "bye\x00\r\n2026-01-01 WARNING forged line\x1b[2J" + "x" * 5000


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql",
                                                               marks=pytest.mark.postgres)])
def stored(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A live server on each database the store supports."""
    path: Path = tmp_path_factory.mktemp("records")
    if request.param == "sqlite":
        with live_server(relay_settings(path)) as live:
            yield live
    else:
        with postgres_database("security_text") as database, live_server(
                relay_settings(path, database_url=database.url)) as live:
            yield live


def assert_plain(text: Any) -> None:
    """One bounded line of printable text."""
    assert isinstance(text, str) and text, text
    assert not any(ord(c) < 32 or ord(c) == 127 for c in text), repr(text[:80])
    assert len(text) <= 500, len(text)


async def ended(admin: Admin, session_id: str) -> dict[str, Any]:
    return dict(await eventually(lambda: (s := admin.ok("GET", f"/api/sessions/{session_id}"))
                                 and not s["live"] and s["ended_at"] and s))


async def test_t33_a_goodbye_with_control_characters_still_ends_the_session(
        stored: LiveServer) -> None:
    admin = Admin(stored)
    agent_id, key = admin.keyed_machine()
    agent = await Peer.agent(stored, key)
    session_id = await agent.accepted()
    await agent.send("disconnect", pb.Disconnect(reason=HOSTILE))
    session = await ended(admin, session_id)
    assert_plain(session["end_reason"])
    assert "forged line" in session["end_reason"], "the reason is kept, as text"
    await eventually(lambda: admin.ok("GET", f"/api/machines/{agent_id}")["status"] == "offline")
    closed = [e for e in admin.ok("GET", "/api/events", params={"session_id": session_id})
              if e["kind"] == "session.closed"]
    assert closed, "the end of the session is audited"
    assert_plain(closed[0]["detail"]["reason"])


async def test_t33_a_denial_with_control_characters_still_ends_the_session(
        stored: LiveServer) -> None:
    admin = Admin(stored)
    agent = await Peer.agent(stored, admin.code())
    session_id = await agent.accepted()
    await agent.expect("consent_request")
    await agent.send("consent_response", pb.ConsentResponse(session_id=session_id,
                                                            granted=False, reason=HOSTILE))
    session = await ended(admin, session_id)
    assert_plain(session["end_reason"])
    denied = await eventually(lambda: [e for e in admin.ok(
        "GET", "/api/events", params={"session_id": session_id})
        if e["kind"] == "session.consent_denied"])
    assert_plain(denied[0]["detail"]["reason"])


async def test_t33_an_update_status_with_control_characters_is_audited_as_text(
        stored: LiveServer) -> None:
    admin = Admin(stored)
    _agent_id, key = admin.keyed_machine()
    agent = await Peer.agent(stored, key)
    session_id = await agent.accepted()
    await agent.send("update_status", pb.UpdateStatus(
        current_version="1.0\x00\n", state=pb.UPDATE_FAILED, error_message=HOSTILE))
    await agent.send("heartbeat", pb.Heartbeat(timestamp=1))
    await agent.expect("heartbeat_ack")
    [event] = await eventually(lambda: [e for e in admin.ok(
        "GET", "/api/events", params={"session_id": session_id})
        if e["kind"] == "agent.update_status"])
    detail = event["detail"]
    assert_plain(detail["error"])
    assert "\x00" not in detail["version"] and "\n" not in detail["version"]

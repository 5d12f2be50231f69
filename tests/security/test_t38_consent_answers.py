"""T38: consent answers that name another session, or come twice, change nothing.

Joining before consent, denial, timeout, managed sessions and the
consented-technician rule are in tests/relay/test_consent.py.
"""

from __future__ import annotations

import pytest
from remote_server.testing.liveserver import LiveServer

from remote_core.protocol import pb

from .conftest import Admin, Peer

pytestmark = pytest.mark.anyio


async def settled(agent: Peer, stamp: int) -> None:
    """Everything the agent sent before now has been handled."""
    await agent.send("heartbeat", pb.Heartbeat(timestamp=stamp))
    assert (await agent.expect("heartbeat_ack")).client_timestamp == stamp


async def test_t38_a_grant_for_another_session_is_ignored_and_a_second_grant_changes_nothing(
        server: LiveServer, admin: Admin) -> None:
    other = await Peer.agent(server, admin.code())
    other_session = await other.accepted()
    await other.expect("consent_request")
    agent = await Peer.agent(server, admin.code())
    session_id = await agent.accepted()
    await agent.expect("consent_request")
    # This agent answers for the other session: neither session goes live.
    await agent.send("consent_response", pb.ConsentResponse(session_id=other_session,
                                                            granted=True))
    await settled(agent, 1)
    for sid in (session_id, other_session):
        assert admin.ok("GET", f"/api/sessions/{sid}")["consent_state"] == "pending"
        admin.ok("POST", f"/api/sessions/{sid}/viewer-token", 409)
    # Its own grant makes it live, once; a second grant and a late denial change nothing.
    await agent.send("consent_response", pb.ConsentResponse(session_id=session_id, granted=True))
    await agent.send("consent_response", pb.ConsentResponse(session_id=session_id, granted=True))
    await agent.send("consent_response", pb.ConsentResponse(session_id=session_id,
                                                            granted=False, reason="too late"))
    await settled(agent, 2)
    assert admin.ok("GET", f"/api/sessions/{session_id}")["consent_state"] == "granted"
    viewer = await Peer.viewer(server, admin.viewer_token(session_id))
    await viewer.accepted()
    kinds = admin.events(session_id)
    assert kinds.count("session.consent_granted") == 1
    assert "session.consent_denied" not in kinds and "session.closed" not in kinds
    assert admin.ok("GET", f"/api/sessions/{other_session}")["consent_state"] == "pending"

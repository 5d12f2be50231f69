"""What a peer claims never forges or floods a log line (finding 7 of the security review).

A keyed or shared-key agent may claim any ``agent_id``; the authenticators log
a claimed id that differs from the key's machine (at debug level for a key: an
agent's own first-run id differs from its machine's as a rule). A newline in it used to
write a whole forged line, and a 1,000,000-character id a line that long.
"""

from __future__ import annotations

import logging

import pytest

from .conftest import SHARED_KEY, Admin, Peer

pytestmark = pytest.mark.anyio

FORGED = "x\n2026-01-01 00:00:00,000 WARNING remote_server.web: admin password reset by evil"
HUGE = "y" * 1_000_000


def assert_log_lines_are_safe(caplog: pytest.LogCaptureFixture) -> None:
    assert caplog.records, "nothing was logged: the test would prove nothing"
    for record in caplog.records:
        message = record.getMessage()
        assert "\n" not in message, message[:300]
        assert len(message) < 2_000, f"a {len(message)}-character log line"


@pytest.mark.parametrize("claimed", [FORGED, HUGE], ids=["newline", "megabyte"])
async def test_a_keyed_agents_claimed_id_is_logged_quoted_and_bounded(
        server, admin: Admin, caplog: pytest.LogCaptureFixture, claimed: str) -> None:
    _agent_id, key = admin.keyed_machine()
    with caplog.at_level(logging.DEBUG):
        agent = await Peer.agent(server, key, agent_id=claimed)
        await agent.accepted()  # the key decides who it is; the claim is only logged
        await agent.close()
    assert any("claimed agent_id" in r.getMessage() for r in caplog.records)
    assert_log_lines_are_safe(caplog)


async def test_a_normally_provisioned_keyed_agent_connects_without_a_warning(
        server, admin: Admin, caplog: pytest.LogCaptureFixture) -> None:
    # An agent makes up its own agent_id at first run; the key's machine has another.
    _agent_id, key = admin.keyed_machine()
    with caplog.at_level(logging.INFO):
        agent = await Peer.agent(server, key, agent_id="5f0c1f9e-its-own-first-run-id")
        await agent.accepted()
        await agent.close()
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert not warnings, warnings


@pytest.mark.parametrize("claimed", [FORGED, HUGE], ids=["newline", "megabyte"])
async def test_a_shared_key_agents_claimed_id_is_logged_quoted_and_bounded(
        server, caplog: pytest.LogCaptureFixture, claimed: str) -> None:
    with caplog.at_level(logging.INFO):
        agent = await Peer.agent(server, SHARED_KEY, agent_id=claimed)
        await agent.response()  # admitted or refused for its id: logged safely either way
        await agent.close()
    assert_log_lines_are_safe(caplog)

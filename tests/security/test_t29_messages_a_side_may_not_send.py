"""T29: every message kind a side may not send is dropped, counted, logged, never relayed.

tests/relay/test_fanout.py::test_each_side_may_send_only_its_own_kinds tries
five kinds each way; here every kind of the ``Message`` oneof outside the
sender's row of ``ALLOWED`` is tried over real sockets, and each must show up
as a warning in the log (a bypass attempt, ASVS 16.3.3; RustDesk
CVE-2026-30798 was an unauthenticated AdminCommand).
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from remote_server.testing.liveserver import LiveServer

from remote_core.protocol import ALLOWED, Role, pb

from .conftest import Admin, Peer

pytestmark = pytest.mark.anyio

EVERY_KIND = [f.name for f in pb.Message.DESCRIPTOR.oneofs_by_name["payload"].fields]
FROM_VIEWER = sorted(set(EVERY_KIND) - ALLOWED[(Role.VIEWER, Role.SERVER)])
FROM_AGENT = sorted(set(EVERY_KIND) - ALLOWED[(Role.AGENT, Role.SERVER)])
SOMETHING = {"admin_command": pb.AdminCommand(command=pb.ADMIN_UNINSTALL, reason="x"),
             "update_info": pb.UpdateInfo(version="99.0.0", download_url="https://evil.example/x",
                                          checksum_sha256="00" * 32, mandatory=True),
             "consent_response": pb.ConsentResponse(granted=True),
             "session_response": pb.SessionResponse(success=True, session_id="forged")}


def payload(kind: str) -> Any:
    """A message of ``kind``: a meaningful one where it matters, else the empty one."""
    if kind in SOMETHING:
        return SOMETHING[kind]
    field = pb.Message.DESCRIPTOR.fields_by_name[kind]
    return getattr(pb, field.message_type.name)()


async def quiet(peer: Peer, stamp: int) -> None:
    """Everything sent to ``peer`` before now has arrived: only its heartbeat ack comes."""
    await peer.send("heartbeat", pb.Heartbeat(timestamp=stamp))
    ack = await peer.expect("heartbeat_ack", skip=frozenset({"start_stream"}))
    assert ack.client_timestamp == stamp


def assert_logged(caplog: pytest.LogCaptureFixture, kinds: list[str]) -> None:
    warned = {r.getMessage().split()[1] for r in caplog.records
              if r.levelno == logging.WARNING and r.getMessage().startswith("dropped ")}
    assert set(kinds) <= warned, sorted(set(kinds) - warned)


async def live(server: LiveServer, admin: Admin) -> tuple[Peer, Peer, str]:
    agent = await Peer.agent(server, admin.keyed_machine()[1])
    session_id = await agent.accepted()
    viewer = await Peer.viewer(server, admin.viewer_token(session_id))
    await viewer.accepted()
    await agent.expect("start_stream")
    return agent, viewer, session_id


async def test_t29_a_viewer_cannot_send_what_only_the_server_or_the_agent_sends(
        server: LiveServer, admin: Admin, caplog: pytest.LogCaptureFixture) -> None:
    assert {"admin_command", "update_info", "consent_response", "start_stream",
            "session_response", "video_frame", "agent_status"} <= set(FROM_VIEWER)
    agent, viewer, session_id = await live(server, admin)
    with caplog.at_level(logging.WARNING):
        for kind in FROM_VIEWER:
            await viewer.send(kind, payload(kind))
        await quiet(viewer, 1)
    await quiet(agent, 2)  # nothing the viewer sent reached the agent
    link = next(iter(server.ctx.registry.live(session_id).viewers.values()))
    assert dict(link.conn.dropped) == dict.fromkeys(FROM_VIEWER, 1)
    assert_logged(caplog, FROM_VIEWER)


async def test_t29_an_agent_cannot_send_what_only_the_server_or_a_viewer_sends(
        server: LiveServer, admin: Admin, caplog: pytest.LogCaptureFixture) -> None:
    assert {"admin_command", "update_info", "consent_request", "start_stream", "mouse_event",
            "key_event", "session_response"} <= set(FROM_AGENT)
    agent, viewer, session_id = await live(server, admin)
    with caplog.at_level(logging.WARNING):
        for kind in FROM_AGENT:
            await agent.send(kind, payload(kind))
        await quiet(agent, 1)
    await quiet(viewer, 2)  # nothing the agent sent reached the viewer
    session = server.ctx.registry.live(session_id)
    assert dict(session.agent.conn.dropped) == dict.fromkeys(FROM_AGENT, 1)
    assert_logged(caplog, FROM_AGENT)

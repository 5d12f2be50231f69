"""A change to a technician's standing reaches their live viewer sockets at once (finding 1).

Before, deleting, disabling or narrowing a technician refused new joins only:
an open viewer kept its video and its input still reached the agent, and a
viewer token minted before a password change still joined afterwards.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from remote_core.protocol import pb

from .conftest import Admin, Peer

pytestmark = pytest.mark.anyio

PASSWORD = "technician-password"


def technician(admin: Admin, *permissions: str) -> tuple[str, Admin]:
    """A technician with ``permissions`` and every organization: (user id, logged in)."""
    name = f"tech-{uuid.uuid4().hex[:8]}"
    user = admin.ok("POST", "/api/users", 201, json={
        "username": name, "password": PASSWORD, "role": "technician",
        "permissions": list(permissions)})
    admin.ok("PUT", f"/api/users/{user['id']}/client-access", json={"organizations": ["*"]})
    return user["id"], Admin(admin.server, name, PASSWORD)


async def watching(server: Any, admin: Admin, *permissions: str
                   ) -> tuple[Peer, Peer, str, Admin, str]:
    """A keyed agent and a technician's viewer on its session, video flowing."""
    user_id, tech = technician(admin, *permissions)
    _agent_id, key = admin.keyed_machine()
    agent = await Peer.agent(server, key)
    session_id = await agent.accepted()
    viewer = await Peer.viewer(server, tech.viewer_token(session_id))
    await viewer.accepted()
    await agent.expect("start_stream")
    await agent.send("video_frame", pb.VideoFrame(sequence=1, raw=pb.RawFrame(is_keyframe=True)))
    assert (await viewer.expect("video_frame")).sequence == 1
    return agent, viewer, user_id, tech, session_id


async def assert_closed_out(viewer: Peer, agent: Peer, words: str) -> None:
    disconnect = await viewer.expect("disconnect", skip=frozenset({"heartbeat_ack",
                                                                   "video_frame"}))
    assert disconnect.reason.startswith("access withdrawn") and words in disconnect.reason
    await viewer.closed()
    assert (await agent.expect("stop_stream")).viewer_id


WITHDRAWALS: dict[str, tuple[Callable[[Admin, str], None], str]] = {
    "deleted": (lambda admin, uid: admin.ok("DELETE", f"/api/users/{uid}", 204),
                "no longer exists"),
    "disabled": (lambda admin, uid: admin.ok("PATCH", f"/api/users/{uid}",
                                             json={"disabled": True}), "disabled"),
    "lost view": (lambda admin, uid: admin.ok("PUT", f"/api/users/{uid}/permissions",
                                              json={"permissions": []}), "may not view"),
    "lost the organization": (lambda admin, uid: admin.ok(
        "PUT", f"/api/users/{uid}/client-access", json={"organizations": ["other-org"]}),
        "organization"),
    "password reset by an admin": (lambda admin, uid: admin.ok(
        "PATCH", f"/api/users/{uid}", json={"password": "a-brand-new-password"}), "password"),
}


@pytest.mark.parametrize("change", list(WITHDRAWALS))
async def test_a_withdrawal_closes_the_live_viewer_at_once(server, admin: Admin,
                                                           change: str) -> None:
    agent, viewer, user_id, _tech, _session = await watching(server, admin, "view", "control")
    withdraw, words = WITHDRAWALS[change]
    withdraw(admin, user_id)
    await assert_closed_out(viewer, agent, words)


async def test_losing_control_leaves_a_view_only_viewer(server, admin: Admin) -> None:
    agent, viewer, user_id, _tech, session_id = await watching(server, admin, "view", "control")
    await viewer.send("mouse_event", pb.MouseEvent(x=1, y=1))
    assert (await agent.expect("mouse_event")).x == 1
    admin.ok("PUT", f"/api/users/{user_id}/permissions", json={"permissions": ["view"]})
    await viewer.send("mouse_event", pb.MouseEvent(x=2, y=2))
    await viewer.send("heartbeat", pb.Heartbeat(timestamp=5))
    await viewer.expect("heartbeat_ack")
    await agent.send("video_frame", pb.VideoFrame(sequence=2, raw=pb.RawFrame(is_keyframe=True)))
    assert (await viewer.expect("video_frame")).sequence == 2  # still watching
    await agent.send("heartbeat", pb.Heartbeat(timestamp=6))
    assert (await agent.expect("heartbeat_ack")).client_timestamp == 6  # no mouse_event first
    assert "viewer.downgraded" in admin.events(session_id)


async def test_a_password_change_closes_viewers_and_voids_earlier_viewer_tokens(
        server, admin: Admin) -> None:
    agent, viewer, _user_id, tech, session_id = await watching(server, admin, "view")
    unused = tech.viewer_token(session_id)
    tech.ok("POST", "/api/auth/change-password", 204, json={
        "current_password": PASSWORD, "new_password": "another-technician-password"})
    await assert_closed_out(viewer, agent, "password")
    late = await Peer.viewer(server, unused)
    response = await late.response()
    assert not response.success and "password change" in response.error

"""Logout, a second-factor reset, a role change and disabling end a technician's tokens at
once: their live viewer sockets close with 1008 and the reason, and viewer tokens minted
before stop working."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from remote_core.protocol import CloseCode

from .conftest import Admin, Peer
from .test_standing import watching

pytestmark = pytest.mark.anyio

REVOCATIONS: dict[str, tuple[Callable[[Admin, Admin, str], None], str]] = {
    "logout": (lambda _admin, tech, _uid: tech.ok("POST", "/api/auth/logout", 204),
               "logged out"),
    "second factor reset": (lambda admin, _tech, uid: admin.ok(
        "DELETE", f"/api/users/{uid}/second-factor", 204), "second factor was reset"),
    "role change": (lambda admin, _tech, uid: admin.ok(
        "PATCH", f"/api/users/{uid}", json={"role": "admin"}), "role was changed"),
}


@pytest.mark.parametrize("change", list(REVOCATIONS))
async def test_a_revocation_closes_the_live_viewer_with_1008_and_voids_its_tokens(
        server, admin: Admin, change: str) -> None:
    agent, viewer, user_id, tech, session_id = await watching(server, admin, "view")
    unused = tech.viewer_token(session_id)
    revoke, words = REVOCATIONS[change]
    revoke(admin, tech, user_id)
    disconnect = await viewer.expect("disconnect", skip=frozenset({"heartbeat_ack",
                                                                   "video_frame"}))
    assert disconnect.reason.startswith("access withdrawn") and words in disconnect.reason
    code, _ = await viewer.closed()
    assert code == CloseCode.POLICY_VIOLATION
    assert (await agent.expect("stop_stream")).viewer_id
    r = tech.http.get("/api/auth/me")
    assert r.status_code == 401 and "revoked" in r.json()["detail"]
    late = await Peer.viewer(server, unused)
    response = await late.response()
    assert not response.success and "revoked" in response.error

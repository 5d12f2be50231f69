"""T13: every credential of the wrong kind is refused where another kind belongs.

The login verifier must refuse a viewer token and the viewer verifier a login
token (SPEC 5.1.2; RFC 8725 3.12), and neither may take an agent's key or
code. Tokens here are real ones of the wrong kind, and tokens signed with the
server's own keys but claiming another purpose, or none: a forger holding a
key is the strongest attacker these checks must still stop.
"""

from __future__ import annotations

import re
import time
from typing import Any

import anyio
import jwt
import pytest
from remote_server.testing.liveserver import LiveServer
from remote_server.web.api import ENDPOINTS

from remote_core.protocol import pb

from .conftest import SHARED_KEY, Admin, Peer, raw_request

GUARDED = [ep for ep in ENDPOINTS if ep.access != "public"]


def signed(server: LiveServer, key_of: str, **claims: Any) -> str:
    """A token signed with the server's own ``key_of`` key ("login" or "viewer")."""
    now = int(time.time())
    payload = {"iss": "remote-support", "iat": now, "exp": now + 300, **claims}
    kid, key = server.ctx.tokens.signing_key(key_of)
    return jwt.encode({k: v for k, v in payload.items() if v is not None}, key,
                      algorithm="HS256", headers={"kid": kid})


async def first_admin(server: LiveServer) -> Any:
    return await server.ctx.store.get_user_by_username("admin")


@pytest.fixture(scope="module")
def not_login_tokens(server: LiveServer, admin: Admin) -> dict[str, str]:
    """Everything that is not a login token, by name."""
    user = anyio.run(first_admin, server)
    pwv = server.ctx.tokens.verify_login(admin.token).password_version
    session_id = "a-session"
    return {
        "viewer token": server.ctx.tokens.mint_viewer(session_id, user, None),
        "agent key": admin.keyed_machine()[1],
        "support code": admin.code(),
        "shared agent key": SHARED_KEY,
        "login claims, viewer key": signed(server, "viewer", purpose="login", sub=user.id,
                                           pwv=pwv),
        "no purpose, login key": signed(server, "login", sub=user.id, pwv=pwv),
        "purpose viewer, login key": signed(server, "login", purpose="viewer", sub=user.id,
                                            pwv=pwv, session_id=session_id),
        "other issuer, login key": signed(server, "login", purpose="login", sub=user.id,
                                          pwv=pwv, iss="someone-else"),
        "login token cut short": admin.token[:-4],
    }


def concrete(path: str) -> str:
    return re.sub(r"{\w+}", "x1", path)


@pytest.mark.parametrize("ep", GUARDED, ids=lambda ep: f"{ep.method} {ep.path}")
def test_t13_no_other_credential_is_a_login_token(server: LiveServer, ep: Any,
                                                  not_login_tokens: dict[str, str]) -> None:
    for name, token in {"none": "", **not_login_tokens}.items():
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        r = raw_request(server, ep.method, concrete(ep.path),
                        headers={**headers, "Content-Type": "application/json"}, body=b"{}")
        assert r.status == 401, (name, r.status, r.body[:200])
        assert r.headers.get("www-authenticate") == "Bearer"


@pytest.mark.anyio
async def test_t13_no_other_credential_is_a_viewer_token(server: LiveServer,
                                                         admin: Admin) -> None:
    agent = await Peer.agent(server, admin.keyed_machine()[1])
    session_id = await agent.accepted()
    user = await first_admin(server)
    pwv = server.ctx.tokens.verify_login(admin.token).password_version
    wrong = {
        "login token": admin.token,
        "agent key": admin.keyed_machine()[1],
        "support code": admin.code(),
        "shared agent key": SHARED_KEY,
        "viewer claims, login key": signed(server, "login", purpose="viewer", sub=user.id,
                                           pwv=pwv, session_id=session_id),
        "no purpose, viewer key": signed(server, "viewer", sub=user.id, pwv=pwv,
                                         session_id=session_id),
        "purpose login, viewer key": signed(server, "viewer", purpose="login", sub=user.id,
                                            pwv=pwv, session_id=session_id),
        "no session, viewer key": signed(server, "viewer", purpose="viewer", sub=user.id,
                                         pwv=pwv),
        "empty": "",
    }
    for name, token in wrong.items():
        viewer = await Peer.viewer(server, token)
        response = await viewer.response()
        assert not response.success and not response.session_id, name
        assert (await viewer.closed())[0] == 1008, name
    # The agent heard of no viewer: nothing above joined its session.
    await agent.send("heartbeat", pb.Heartbeat(timestamp=1))
    assert (await agent.expect("heartbeat_ack")).client_timestamp == 1

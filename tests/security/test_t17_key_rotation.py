"""T17: the token-signing key is rotated with an overlap, and ``kid`` is untrusted input.

Every token names its key in a ``kid`` header. ``remote-support secret rotate``
(run here as the command itself, on the server's database, while the server
runs) makes a new key current; the previous key keeps verifying for the
overlap, so operators stay logged in, viewer tokens already handed out still
join and live viewers stay. After the overlap, and for any ``kid`` the ring
does not hold or that is not a string, the token is refused, even when signed
with the server's own current key. The one deviation: the server rereads its
keys every fifth of a second instead of every 30 s.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import jwt
import pytest
from remote_server.cli import main
from remote_server.testing.liveserver import LiveServer, eventually, live_server
from remote_server.web.context import open_store
from remote_server.web.tokens import key_id

from remote_core.plugins import get_plugin_manager
from remote_core.protocol import pb
from remote_core.records import SigningKey, utcnow

from .conftest import Admin, Peer, relay_settings

pytestmark = pytest.mark.anyio

REFRESH = 0.2


@pytest.fixture(scope="module")
def rotating(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    settings = relay_settings(tmp_path_factory.mktemp("t17"), signing_key_refresh=REFRESH)
    with live_server(settings) as live:
        yield live


def _kid(token: str) -> Any:
    return json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "==")).get("kid")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _me(admin: Admin, token: str) -> int:
    return admin.http.get("/api/auth/me",
                          headers={"Authorization": f"Bearer {token}"}).status_code


async def _admitted(server: LiveServer, token: str) -> bool:
    viewer = await Peer.viewer(server, token)
    response = await viewer.response()
    await viewer.close()
    return bool(response.success)


def _rotate_command(server: LiveServer, *extra: str) -> int:
    return main(["secret", "--database-url", server.ctx.settings.database_url, "rotate",
                 *extra])


async def _switched(server: LiveServer, kid: str) -> None:
    await eventually(lambda: server.ctx.tokens.ring.current.kid == kid, wait=10)


async def test_t17_old_kid_during_overlap_keeps_logins_viewer_tokens_and_live_viewers(
        rotating: LiveServer, capsys: pytest.CaptureFixture[str]) -> None:
    admin = Admin(rotating)
    old_kid = _kid(admin.token)
    assert old_kid == rotating.ctx.tokens.ring.current.kid
    agent = await Peer.agent(rotating, admin.keyed_machine()[1])
    session_id = await agent.accepted()
    live = await Peer.viewer(rotating, admin.viewer_token(session_id))
    await live.accepted()
    handed_out = admin.viewer_token(session_id)
    assert _kid(handed_out) == old_kid

    assert await anyio.to_thread.run_sync(_rotate_command, rotating) == 0
    new_kid = capsys.readouterr().out.split("signed with key ")[1].split(";")[0]
    assert new_kid != old_kid
    await _switched(rotating, new_kid)

    assert _me(admin, admin.token) == 200  # the old login token, within the overlap
    assert await _admitted(rotating, handed_out)
    await live.send("heartbeat", pb.Heartbeat(timestamp=17))
    assert (await live.expect("heartbeat_ack")).client_timestamp == 17
    fresh = Admin(rotating)
    assert _kid(fresh.token) == new_kid and _me(fresh, fresh.token) == 200
    assert _kid(fresh.viewer_token(session_id)) == new_kid
    events = fresh.ok("GET", "/api/events", params={"limit": 100})
    rotated = [e for e in events if e["kind"] == "auth.signing_key_rotated"]
    assert rotated and rotated[0]["target"] == new_kid
    assert rotated[0]["detail"]["previous_kid"] == old_kid
    for peer in (live, agent):
        await peer.close()


async def test_t17_old_kid_after_its_overlap_is_refused(rotating: LiveServer) -> None:
    """The key is retired with a two-second overlap (the store's rotation, as the command
    does it but shorter than the command allows): its tokens pass, then fail."""
    admin = Admin(rotating)
    agent = await Peer.agent(rotating, admin.keyed_machine()[1])
    session_id = await agent.accepted()
    viewer_token = admin.viewer_token(session_id)
    settings = rotating.ctx.settings
    store = open_store(settings, get_plugin_manager(settings))
    await store.open()
    try:
        secret = "t17-" + "x" * 60
        until = utcnow() + timedelta(seconds=2)
        await store.rotate_signing_key(
            SigningKey(kid=key_id(secret), secret=secret, created_at=utcnow()), until)
    finally:
        await store.close()
    await _switched(rotating, key_id(secret))
    assert _me(admin, admin.token) == 200
    await anyio.sleep(max(0.0, until.timestamp() - time.time()) + 0.1)
    assert _me(admin, admin.token) == 401
    assert not await _admitted(rotating, viewer_token)
    assert _me(Admin(rotating), Admin(rotating).token) == 200  # the new key goes on
    await agent.close()


@pytest.mark.parametrize("kid", ["no-such-key", "", 7, None, ["x"], {"kid": "x"}, "absent"])
async def test_t17_unknown_or_non_string_kid_is_refused(rotating: LiveServer,
                                                       kid: Any) -> None:
    """Signed with the server's own current key: only the ``kid`` is wrong."""
    admin = Admin(rotating)
    agent = await Peer.agent(rotating, admin.keyed_machine()[1])
    session_id = await agent.accepted()
    login = jwt.decode(admin.token, options={"verify_signature": False})
    viewer = jwt.decode(admin.viewer_token(session_id), options={"verify_signature": False})
    headers = {} if kid == "absent" else {"kid": kid}
    tokens = rotating.ctx.tokens

    def signed(kind: str, claims: dict[str, Any]) -> str:
        """HS256 by hand: PyJWT will not put a non-string ``kid`` on a token it signs."""
        head = _b64(json.dumps({"alg": "HS256", "typ": "JWT", **headers}).encode())
        body = _b64(json.dumps(claims).encode())
        mac = hmac.new(tokens.signing_key(kind)[1], f"{head}.{body}".encode(), hashlib.sha256)
        token = f"{head}.{body}.{_b64(mac.digest())}"
        assert _kid(token) == headers.get("kid")
        return token

    assert _me(admin, signed("login", login)) == 401
    assert not await _admitted(rotating, signed("viewer", viewer))
    # The same claims under the right kid pass: the kid alone was refused.
    headers = {"kid": tokens.signing_key("login")[0]}
    assert _me(admin, signed("login", login)) == 200
    await agent.close()


def test_t17_the_command_keeps_the_overlap_at_least_the_longest_token_life(
        rotating: LiveServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = rotating.ctx.tokens.ring.current.kid
    assert _rotate_command(rotating, "--overlap", "3600") == 2
    assert "at least the longest token lifetime" in capsys.readouterr().err
    configured = ["secret", "--database-url", f"sqlite:///{tmp_path / 'c.db'}", "rotate"]
    with pytest.MonkeyPatch.context() as env:
        env.setenv("REMOTE_SUPPORT_JWT_SECRET", "s" * 64)
        assert main(configured) == 2
    assert "REMOTE_SUPPORT_JWT_SECRET" in capsys.readouterr().err
    time.sleep(3 * REFRESH)
    assert rotating.ctx.tokens.ring.current.kid == before

"""T15 and T16: algorithm games and time claims, on the HTTP API and on the viewer socket.

Each forged token carries claims that would be valid; only its header, its
signature or its times are wrong. Where a key is needed the forger holds the
server's own (the worst case), so the algorithm allowlist (HS256 only) and
the required claims are what stops it (PyJWT api_jws.py; GHSA-ffqj-6fqr-9h24).
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from remote_server.testing.liveserver import LiveServer

from .conftest import Admin, Peer

pytestmark = [pytest.mark.anyio,
              # HS384/HS512 with the server's 32-byte key: a forgery, whatever PyJWT thinks of it
              pytest.mark.filterwarnings("ignore::jwt.warnings.InsecureKeyLengthWarning")]


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsigned(claims: dict[str, Any], header: dict[str, Any]) -> str:
    return f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}."


def spliced(token: str, other: str) -> str:
    """``token``'s header and claims under ``other``'s (valid) signature."""
    header, claims, _ = token.split(".")
    return f"{header}.{claims}.{other.split('.')[2]}"


Forger = Callable[[dict[str, Any], bytes, dict[str, str]], str]

# name -> how to make a token of the given claims with the server's key for its kind and
# that key's ``kid`` header (``kid``: ``{"kid": ...}``), the strongest forger.
ALGORITHM_GAMES: dict[str, Forger] = {
    "alg none": lambda claims, key, kid: unsigned(claims, {"alg": "none", "typ": "JWT", **kid}),
    "alg None, signature kept": lambda claims, key, kid: unsigned(
        claims, {"alg": "None", "typ": "JWT", **kid}) + b64(b"x" * 32),
    "HS384 with the right key": lambda claims, key, kid: jwt.encode(
        claims, key, algorithm="HS384", headers=kid),
    "HS512 with the right key": lambda claims, key, kid: jwt.encode(
        claims, key, algorithm="HS512", headers=kid),
    "RS256 with the forger's key": lambda claims, key, kid: jwt.encode(
        claims, rsa.generate_private_key(public_exponent=65537, key_size=2048),
        algorithm="RS256", headers=kid),
    "ES256 with the forger's key": lambda claims, key, kid: jwt.encode(
        claims, ec.generate_private_key(ec.SECP256R1()), algorithm="ES256", headers=kid),
    "HS256 with another key": lambda claims, key, kid: jwt.encode(
        claims, b"k" * 32, algorithm="HS256", headers=kid),
    "critical header extension": lambda claims, key, kid: jwt.encode(
        claims, key, algorithm="HS256", headers={"crit": ["exp"], "exp": 1, **kid}),
    "signature of another token": lambda claims, key, kid: spliced(
        jwt.encode(claims, key, algorithm="HS256", headers=kid),
        jwt.encode({**claims, "sub": "someone-else"}, key, algorithm="HS256", headers=kid)),
}

# name -> change to the time claims (relative to now); T16.
TIME_GAMES: dict[str, dict[str, Any]] = {
    "expired a second ago": {"exp": -1},
    "expired a minute ago": {"exp": -60},
    "no exp": {"exp": None},
    "no iat": {"iat": None},
    "issued in the future": {"iat": 3600},
    "not valid before an hour from now": {"nbf": 3600},
    "exp not a number": {"exp": "tomorrow"},
}


@dataclass(frozen=True)
class Subject:
    """Whom the forged tokens name: the first admin, with its password fingerprint and the
    login session of its token (a login token names a live one in ``jti``)."""

    user_id: str
    pwv: str
    login_session: str


def claims_for(subject: Subject, kind: str, session_id: str, **times: Any) -> dict[str, Any]:
    """Valid claims of a login or viewer token for ``subject``; ``times`` shift or drop the
    time claims (seconds from now, ``None`` = absent, a string = as is)."""
    now = int(time.time())
    base: dict[str, Any] = {"iss": "remote-support", "purpose": kind, "iat": now,
                            "exp": now + 300, "sub": subject.user_id, "pwv": subject.pwv}
    if kind == "viewer":
        base.update(session_id=session_id, tenant_id=None)
    else:
        base.update(jti=subject.login_session)
    for name, shift in times.items():
        if shift is None:
            base.pop(name, None)
        elif isinstance(shift, str):
            base[name] = shift
        else:
            base[name] = now + shift
    return base


OTHER_KINDS_KEY = "HS256, the other kind's key"
GAMES = [*ALGORITHM_GAMES, OTHER_KINDS_KEY]


def forge(server: LiveServer, game: str, kind: str, claims: dict[str, Any]) -> str:
    """A token of ``kind`` played by ``game``, with the server's own keys at hand."""
    if game == OTHER_KINDS_KEY:
        kid, other = server.ctx.tokens.signing_key("viewer" if kind == "login" else "login")
        return jwt.encode(claims, other, algorithm="HS256", headers={"kid": kid})
    kid, key = server.ctx.tokens.signing_key(kind)
    return ALGORITHM_GAMES[game](claims, key, {"kid": kid})


def signed(server: LiveServer, kind: str, claims: dict[str, Any]) -> str:
    """Honestly signed with the server's current key for ``kind``."""
    kid, key = server.ctx.tokens.signing_key(kind)
    return jwt.encode(claims, key, algorithm="HS256", headers={"kid": kid})


@pytest.fixture(scope="module")
def subject(server: LiveServer, admin: Admin) -> Subject:
    claims = server.ctx.tokens.verify_login(admin.token)
    return Subject(claims.user_id, claims.password_version, claims.token_id)


def api_status(admin: Admin, token: str) -> int:
    """What ``GET /api/auth/me`` answers to ``token`` (sent instead of the admin's own)."""
    return admin.http.get("/api/auth/me", headers={"Authorization": f"Bearer {token}"}).status_code


async def viewer_admitted(server: LiveServer, token: str) -> bool:
    viewer = await Peer.viewer(server, token)
    response = await viewer.response()
    await viewer.close()
    return bool(response.success)


async def test_t15_the_honest_tokens_pass(server: LiveServer, admin: Admin,
                                          subject: Subject) -> None:
    """The forgers below differ from these in one respect each."""
    agent = await Peer.agent(server, admin.keyed_machine()[1])
    session_id = await agent.accepted()
    login = signed(server, "login", claims_for(subject, "login", session_id))
    assert api_status(admin, login) == 200
    viewer = signed(server, "viewer", claims_for(subject, "viewer", session_id))
    assert await viewer_admitted(server, viewer)


@pytest.mark.parametrize("game", GAMES)
async def test_t15_algorithm_and_signature_games_are_refused(
        server: LiveServer, admin: Admin, subject: Subject, game: str) -> None:
    agent = await Peer.agent(server, admin.keyed_machine()[1])
    session_id = await agent.accepted()
    assert api_status(admin, forge(server, game, "login",
                                    claims_for(subject, "login", session_id))) == 401
    assert not await viewer_admitted(server, forge(server, game, "viewer",
                                                   claims_for(subject, "viewer", session_id)))


@pytest.mark.parametrize("game", list(TIME_GAMES))
async def test_t16_tokens_outside_their_time_are_refused(
        server: LiveServer, admin: Admin, subject: Subject, game: str) -> None:
    agent = await Peer.agent(server, admin.keyed_machine()[1])
    session_id = await agent.accepted()
    for kind in ("login", "viewer"):
        token = signed(server, kind, claims_for(subject, kind, session_id, **TIME_GAMES[game]))
        if kind == "login":
            assert api_status(admin, token) == 401, game
        else:
            assert not await viewer_admitted(server, token), game


async def test_t16_a_viewer_token_about_to_expire_still_joins(
        server: LiveServer, admin: Admin, subject: Subject) -> None:
    """exp - 2 s is valid; the same token a few seconds later is not (no leeway)."""
    agent = await Peer.agent(server, admin.keyed_machine()[1])
    session_id = await agent.accepted()
    token = signed(server, "viewer", claims_for(subject, "viewer", session_id, exp=2))
    assert await viewer_admitted(server, token)
    await anyio.sleep(2.5)
    assert not await viewer_admitted(server, token)

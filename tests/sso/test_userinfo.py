"""Claims from the provider's userinfo endpoint, against a provider on loopback whose
answers the test chooses (a subject that differs, an ``amr`` it should not be trusted
with): the parts a certified provider never gets wrong on purpose."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from remote_server.web.sso.config import OidcConfig
from remote_server.web.sso.provider import OidcError, Provider, Tokens

pytestmark = pytest.mark.anyio

ACCESS_TOKEN = "access-token-of-this-login"


class StubProvider:
    """Discovery, JWKS and userinfo, answered from :attr:`userinfo`; counts its reads."""

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        self.jwks = {"keys": [{**jwk, "kid": "k1", "use": "sig", "alg": "RS256"}]}
        self.userinfo: dict[str, Any] = {}
        self.userinfo_reads = 0
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/.well-known/openid-configuration":
                    body: Any = {"issuer": stub.issuer, "jwks_uri": stub.issuer + "/jwks",
                                 "authorization_endpoint": stub.issuer + "/auth",
                                 "token_endpoint": stub.issuer + "/token",
                                 "userinfo_endpoint": stub.issuer + "/userinfo"}
                elif self.path == "/jwks":
                    body = stub.jwks
                elif (self.path == "/userinfo" and self.headers.get("Authorization")
                      == f"Bearer {ACCESS_TOKEN}"):
                    stub.userinfo_reads += 1
                    body = stub.userinfo
                else:
                    self.send_error(401)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.issuer = f"http://127.0.0.1:{self.server.server_address[1]}"

    def id_token(self, **claims: Any) -> str:
        now = int(time.time())
        return jwt.encode({"iss": self.issuer, "aud": "remote-support", "sub": "u-1",
                           "iat": now, "exp": now + 300, "nonce": "n-1", **claims},
                          self.key, algorithm="RS256", headers={"kid": "k1"})


@pytest.fixture
def stub() -> Iterator[StubProvider]:
    running = StubProvider()
    thread = threading.Thread(target=running.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield running
    finally:
        running.server.shutdown()
        running.server.server_close()


def provider(stub: StubProvider) -> Provider:
    return Provider(OidcConfig(issuer=stub.issuer, client_id="remote-support",
                               client_secret="secret", redirect_url="http://127.0.0.1/cb",
                               group_roles={"techs": "technician"},
                               allow_http_loopback=True))


async def test_missing_claims_come_from_userinfo_and_nothing_else(stub: StubProvider) -> None:
    stub.userinfo = {"sub": "u-1", "preferred_username": "tess", "groups": ["techs"],
                     "amr": ["mfa"], "email": "tess@example.test"}
    claims = await provider(stub).claims(Tokens(stub.id_token(), ACCESS_TOKEN), "n-1")
    assert (claims["preferred_username"], claims["groups"]) == ("tess", ["techs"])
    assert "amr" not in claims and "email" not in claims  # the ID token's say alone
    assert stub.userinfo_reads == 1


async def test_an_id_token_with_both_claims_needs_no_userinfo(stub: StubProvider) -> None:
    token = stub.id_token(preferred_username="tess", groups=["techs"])
    claims = await provider(stub).claims(Tokens(token, ACCESS_TOKEN), "n-1")
    assert claims["groups"] == ["techs"] and stub.userinfo_reads == 0


async def test_the_id_tokens_own_claims_win(stub: StubProvider) -> None:
    stub.userinfo = {"sub": "u-1", "preferred_username": "admin", "groups": ["admins"]}
    claims = await provider(stub).claims(
        Tokens(stub.id_token(preferred_username="tess"), ACCESS_TOKEN), "n-1")
    assert (claims["preferred_username"], claims["groups"]) == ("tess", ["admins"])


@pytest.mark.parametrize("userinfo", [{"sub": "someone-else", "groups": ["techs"]},
                                      {"groups": ["techs"]}])
async def test_userinfo_about_another_subject_is_refused(stub: StubProvider,
                                                        userinfo: dict[str, Any]) -> None:
    stub.userinfo = userinfo
    with pytest.raises(OidcError, match="another subject"):
        await provider(stub).claims(Tokens(stub.id_token(), ACCESS_TOKEN), "n-1")

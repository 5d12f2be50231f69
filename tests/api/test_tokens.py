"""Login tokens and viewer tokens never stand in for each other; forgeries fail."""

from __future__ import annotations

import time

import jwt
import pytest
from remote_server.testing.liveserver import ApiClient, assert_problem
from remote_server.web.tokens import TokenError, TokenService

from remote_core.records import User

USER = User(id="u-1", username="ann", password_hash="$argon2id$fake")
SECRET = "s" * 64


@pytest.fixture
def tokens() -> TokenService:
    return TokenService(SECRET)


def test_each_kind_verifies_as_itself(tokens: TokenService) -> None:
    assert tokens.verify_login(tokens.mint_login(USER)).user_id == "u-1"
    claims = tokens.verify_viewer(tokens.mint_viewer("sess-1", USER, "t-1"), "sess-1")
    assert (claims.user_id, claims.session_id, claims.tenant_id) == ("u-1", "sess-1", "t-1")


def test_viewer_token_is_not_a_login_token_and_back(tokens: TokenService) -> None:
    with pytest.raises(TokenError):
        tokens.verify_login(tokens.mint_viewer("sess-1", USER, None))
    with pytest.raises(TokenError):
        tokens.verify_viewer(tokens.mint_login(USER))


def test_viewer_token_is_bound_to_its_session(tokens: TokenService) -> None:
    token = tokens.mint_viewer("sess-1", USER, None)
    with pytest.raises(TokenError, match="another session"):
        tokens.verify_viewer(token, "sess-2")


def test_viewer_token_lives_five_minutes(tokens: TokenService) -> None:
    claims = jwt.decode(tokens.mint_viewer("s", USER, None), options={"verify_signature": False})
    assert claims["exp"] - claims["iat"] == 300 and claims["purpose"] == "viewer"
    assert claims["session_id"] == "s" and "tenant_id" in claims


def test_alg_none_wrong_key_and_expiry_fail(tokens: TokenService) -> None:
    now = int(time.time())
    base = {"iss": "remote-support", "sub": "u-1", "pwv": "x", "iat": now, "exp": now + 60}
    unsigned = jwt.encode({**base, "purpose": "login"}, None, algorithm="none")
    forged = jwt.encode({**base, "purpose": "login"}, "another key" * 4, algorithm="HS256")
    raw_secret = jwt.encode({**base, "purpose": "login"}, SECRET, algorithm="HS256")
    for token in (unsigned, forged, raw_secret, "", "x.y.z"):
        with pytest.raises(TokenError):
            tokens.verify_login(token)
    viewer_none = jwt.encode({**base, "purpose": "viewer", "session_id": "s"}, None,
                             algorithm="none")
    with pytest.raises(TokenError):
        tokens.verify_viewer(viewer_none, "s")
    expired = TokenService(SECRET, login_ttl=-10, viewer_ttl=-10)
    with pytest.raises(TokenError, match="expired"):
        tokens.verify_login(expired.mint_login(USER))
    with pytest.raises(TokenError, match="expired"):
        tokens.verify_viewer(expired.mint_viewer("s", USER, None), "s")


def test_exp_and_iat_are_required(tokens: TokenService) -> None:
    kid, key = tokens.signing_key("login")
    now = int(time.time())
    for missing in ("exp", "iat"):
        claims = {"iss": "remote-support", "purpose": "login", "sub": "u-1", "pwv": "x",
                  "iat": now, "exp": now + 60}
        del claims[missing]
        with pytest.raises(TokenError):
            tokens.verify_login(jwt.encode(claims, key, algorithm="HS256",
                                           headers={"kid": kid}))


def test_a_secret_is_required() -> None:
    with pytest.raises(ValueError):
        TokenService("")


def test_viewer_token_on_the_http_api_is_401(admin: ApiClient) -> None:
    ctx = admin.server.ctx
    me = admin.get("/api/auth/me").json()
    user = User(id=me["id"], username="admin", password_hash="")
    viewer = ctx.tokens.mint_viewer("sess-x", user, None)
    r = admin.get("/api/auth/me", headers={"Authorization": f"Bearer {viewer}"})
    assert_problem(r, 401)


def test_the_signing_secret_is_generated_and_kept(admin: ApiClient) -> None:
    import anyio

    ctx = admin.server.ctx
    stored = anyio.run(ctx.store.get_or_create_secret, "jwt_signing_key", "other")
    assert len(stored) >= 64 and stored != "other"

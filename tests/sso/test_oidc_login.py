"""Single sign-on end to end over HTTP: a real server process with the plugin, a real
OpenID provider process, the whole authorization code flow with PKCE.

Two servers: one as shipped (no account created on first sign-in), one with
``create_users`` on. Each test client speaks from its own address (the servers trust
127.0.0.1 as a proxy), so the login rate limit of one test never reaches another.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from remote_server.testing.liveserver import fresh_ip
from remote_server.testing.oidc_provider import OpenIdProvider
from remote_server.testing.processes import ADMIN_PASSWORD, ServerProcess

from .servers import Sso, start_server


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory, provider: OpenIdProvider) -> Iterator[Sso]:
    sso = start_server(tmp_path_factory.mktemp("shipped"), provider, create_users=False)
    try:
        admin = _admin(sso.server)
        r = admin.post("/api/users", json={"username": "alice", "password": "alice-local-pw-1",
                                           "role": "technician", "permissions": ["view"]})
        assert r.status_code == 201, r.text
        yield sso
    finally:
        sso.server.stop()


@pytest.fixture(scope="module")
def jit(tmp_path_factory: pytest.TempPathFactory, provider: OpenIdProvider) -> Iterator[Sso]:
    sso = start_server(tmp_path_factory.mktemp("jit"), provider, create_users=True)
    try:
        yield sso
    finally:
        sso.server.stop()


def _client(server: ServerProcess) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers={"X-Forwarded-For": fresh_ip()},
                        timeout=30)


def _admin(server: ServerProcess) -> httpx.Client:
    client = _client(server)
    r = client.post("/api/auth/login", json={"username": "admin", "password": ADMIN_PASSWORD})
    assert r.status_code == 200, r.text
    client.headers["Authorization"] = f"Bearer {r.json()['access_token']}"
    return client


def _sign_in(server: ServerProcess, subject: str) -> tuple[httpx.Client, httpx.Response]:
    """Start at the server, sign in at the provider as ``subject``, come back: the
    callback's answer (a redirect to the console, or the refusal page)."""
    client = _client(server)
    start = client.get("/auth/oidc/start")
    assert start.status_code == 303, start.text
    authorize = start.headers["location"]
    query = parse_qs(urlsplit(authorize).query)
    assert query["code_challenge_method"] == ["S256"]
    assert query["redirect_uri"] == [f"{server.url}/auth/oidc/callback"]
    assert query["nonce"] and query["state"] and query["code_challenge"]
    with httpx.Client(timeout=30) as browser_at_provider:
        form = browser_at_provider.get(authorize)
        assert form.status_code == 200, form.text
        back = browser_at_provider.post(authorize, data={"sub": subject})
    assert back.status_code == 302, back.text
    callback = back.headers["location"]
    assert callback.startswith(f"{server.url}/auth/oidc/callback?")
    return client, client.get(callback)


def _token(client: httpx.Client, landing: httpx.Response) -> str:
    assert landing.status_code == 303, landing.text
    location = landing.headers["location"]
    console, _, fragment = location.partition("#sso=")
    assert console.endswith("/console/") and "?" not in console  # nothing in the query
    r = client.post("/auth/oidc/exchange", json={"code": fragment})
    assert r.status_code == 200, r.text
    again = client.post("/auth/oidc/exchange", json={"code": fragment})
    assert again.status_code == 401  # one time only
    assert again.headers["content-type"].startswith("application/problem+json")
    return str(r.json()["access_token"])


def _me(server: ServerProcess, token: str) -> dict[str, object]:
    with _client(server) as client:
        r = client.get("/api/auth/me", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200, r.text
    data: dict[str, object] = r.json()
    return data


def _audit(server: ServerProcess, kind: str) -> list[dict[str, object]]:
    r = _admin(server).get("/api/events")
    assert r.status_code == 200, r.text
    rows: list[dict[str, object]] = [e for e in r.json() if e["kind"] == kind]
    return rows


def test_the_console_learns_the_provider_name(shipped: Sso) -> None:
    with _client(shipped.server) as client:
        r = client.get("/api/auth/sign-in-offers")
    assert r.status_code == 200
    assert r.json() == [{"name": "Test IdP", "start": "/auth/oidc/start"}]


def test_an_existing_account_signs_in_with_its_own_role(shipped: Sso) -> None:
    client, landing = _sign_in(shipped.server, "alice")
    me = _me(shipped.server, _token(client, landing))
    assert me["username"] == "alice"
    assert me["role"] == "technician"
    logins = _audit(shipped.server, "auth.login")
    assert any(row.get("actor") == "alice" and (row.get("detail") or {}).get("method") == "oidc"
               for row in logins)


def test_an_unknown_user_is_refused_without_just_in_time_accounts(shipped: Sso) -> None:
    _, landing = _sign_in(shipped.server, "bob")
    assert landing.status_code == 403
    assert "no account named &#x27;bob&#x27;" in landing.text
    assert "script" not in landing.headers["content-security-policy"]
    failed = _audit(shipped.server, "auth.login_failed")
    assert any(row.get("target") == "bob" and
               (row.get("detail") or {}).get("reason") == "unknown user" for row in failed)


def test_a_user_in_no_mapped_group_is_refused(jit: Sso) -> None:
    _, landing = _sign_in(jit.server, "carol")
    assert landing.status_code == 403
    assert "no group allowed" in landing.text
    names = [u["username"] for u in _admin(jit.server).get("/api/users").json()]
    assert "carol" not in names


def test_a_technician_named_like_the_local_admin_does_not_get_its_account(
        shipped: Sso) -> None:
    _, landing = _sign_in(shipped.server, "mallory")
    assert landing.status_code == 403
    assert "do not make you one" in landing.text


def test_just_in_time_accounts_take_the_mapped_role(jit: Sso) -> None:
    client, landing = _sign_in(jit.server, "dave")
    me = _me(jit.server, _token(client, landing))
    assert me["username"] == "dave" and me["role"] == "admin"
    client, landing = _sign_in(jit.server, "erin")
    me = _me(jit.server, _token(client, landing))
    assert me["role"] == "technician"
    assert sorted(me["permissions"]) == ["control", "view"]  # type: ignore[type-var]
    assert me["client_access"] == ["acme"]


def test_groups_place_a_sign_in_in_their_tenant(jit: Sso) -> None:
    """oidc_group_tenants: a just-in-time account joins the tenant its groups name (by
    name); a tenant the server lacks, or two at once, is refused."""
    _, landing = _sign_in(jit.server, "frank")
    assert landing.status_code == 403 and "which this server does not have" in landing.text
    created = _admin(jit.server).post("/api/tenants", json={"name": "Globex"})
    assert created.status_code == 201, created.text
    globex = created.json()["id"]
    client, landing = _sign_in(jit.server, "frank")
    me = _me(jit.server, _token(client, landing))
    assert (me["username"], me["tenant_id"], me["global_admin"]) == ("frank", globex, False)
    _, landing = _sign_in(jit.server, "grace")
    assert landing.status_code == 403 and "more than one tenant" in landing.text
    # the default tenant's technician stays the default tenant's
    client, landing = _sign_in(jit.server, "bob")
    assert _me(jit.server, _token(client, landing))["tenant_id"] != globex


def test_a_callback_from_another_browser_is_refused(shipped: Sso) -> None:
    _sign_in(shipped.server, "alice")  # a real login under way elsewhere
    with _client(shipped.server) as stranger:
        r = stranger.get("/auth/oidc/callback", params={"code": "x", "state": "y"})
    assert r.status_code == 403
    assert "not started from this browser" in r.text


def test_the_local_admin_still_logs_in_with_a_password(shipped: Sso) -> None:
    assert _admin(shipped.server).get("/api/auth/me").json()["role"] == "admin"


def test_no_secret_reaches_the_log(shipped: Sso, jit: Sso) -> None:
    for sso in (shipped, jit):
        log = sso.server.log.read_text()
        assert sso.client_secret not in log
        assert not re.search(r"eyJ[A-Za-z0-9_-]{10,}\.", log)  # no JWT of any kind


def test_the_bare_address_still_opens_the_console(shipped: Sso) -> None:
    with _client(shipped.server) as client:
        r = client.get("/")
    assert r.status_code in (302, 303, 307)
    assert r.headers["location"].endswith("/console/")


def test_a_callback_is_taken_once(shipped: Sso) -> None:
    client, landing = _sign_in(shipped.server, "alice")
    assert landing.status_code == 303
    callback = landing.request.url
    state = parse_qs(callback.query.decode())["state"][0]
    client.cookies.set("remote_support_oidc", state, path="/auth/oidc")
    replay = client.get(str(callback))
    assert replay.status_code == 403
    assert "already used" in replay.text

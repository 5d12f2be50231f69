"""T02: once a user exists, no route and no spelling of one creates another without an admin.

ScreenConnect CVE-2024-1709: ``/SetupWizard.aspx/`` (a trailing slash) reached
the first-run wizard of a configured server and made administrators. Here the
first admin is made by the server itself at start-up; afterwards only an
admin's ``POST /api/users`` may add a user, whatever the path looks like on
the wire and whoever else asks.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from remote_server.testing.liveserver import LiveServer

from .conftest import Admin, raw_request

NEW_USER = {"username": "intruder", "password": "intruder-password", "role": "admin",
            "permissions": [], "client_access": ["*"]}

# The creating route spelt as a request line can spell it; none may bypass the admin check.
SPELLINGS = [
    "/api/users", "/api/users/", "/API/USERS", "/api/Users", "/api/users%2F", "/api%2Fusers",
    "//api/users", "/api//users", "/api/./users", "/api/x/../users", "/api/users/.",
    "/api/users?", "/api/users;x", "/api/users%00", "/api/%75sers", "/./api/users",
    "/console/../api/users", "/api/users/..;/users",
]
# Set-up and first-run routes other products had; none exists here.
SETUP_ROUTES = ["/setup", "/setup/", "/api/setup", "/api/setup/admin", "/api/first-admin",
                "/api/admin", "/SetupWizard.aspx/", "/api/bootstrap", "/api/register",
                "/api/auth/register", "/api/auth/signup", "/install"]
REFUSED = {401, 403, 404, 405}
REDIRECTS = {307, 308}


def users(admin: Admin) -> list[dict[str, Any]]:
    return sorted(admin.ok("GET", "/api/users"), key=lambda u: str(u["id"]))


def attempt(server: LiveServer, method: str, path: str, token: str | None = None) -> int:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    response = raw_request(server, method, path, headers=headers,
                           body=json.dumps(NEW_USER).encode())
    if response.status in REDIRECTS:
        # A redirect is harmless only if it leads to the canonical, guarded route.
        assert response.headers["location"].endswith("/api/users"), response.headers
    return response.status


@pytest.fixture(scope="module")
def credentials(server: LiveServer, admin: Admin) -> dict[str, str | None]:
    """Everyone but an admin: nobody, a technician with every permission, a viewer token."""
    return {"nobody": None,
            "technician": admin.technician("view", "control", "support_codes").token,
            "viewer token": _viewer_token(server)}


@pytest.mark.parametrize("who", ["nobody", "technician", "viewer token"])
def test_t02_no_spelling_of_a_route_creates_a_user(server: LiveServer, admin: Admin,
                                                   credentials: dict[str, str | None],
                                                   who: str) -> None:
    before = users(admin)
    answers: dict[tuple[str, str], int] = {}
    for path in SPELLINGS + SETUP_ROUTES:
        for method in ("POST", "PUT", "PATCH", "HEAD", "OPTIONS", "GET"):
            answers[(method, path)] = attempt(server, method, path, credentials[who])
    allowed = {k: v for k, v in answers.items() if v not in REFUSED | REDIRECTS}
    assert not allowed, allowed
    after = users(admin)
    assert after == before
    assert "intruder" not in {u["username"] for u in after}


def _viewer_token(server: LiveServer) -> str:
    """A viewer token of the admin: a real signed token of the wrong kind."""
    import anyio

    async def mint() -> str:
        user = await server.ctx.store.get_user_by_username("admin")
        return str(server.ctx.tokens.mint_viewer("any-session", user, None))

    return anyio.run(mint)


def test_t02_a_technician_cannot_raise_their_own_standing(admin: Admin) -> None:
    tech = admin.technician("view")
    me = tech.ok("GET", "/api/auth/me")
    for method, path, body in (
            ("PATCH", f"/api/users/{me['id']}", {"role": "admin"}),
            ("PUT", f"/api/users/{me['id']}/permissions", {"permissions": ["control"]}),
            ("PUT", f"/api/users/{me['id']}/client-access", {"organizations": ["*"]}),
            ("POST", "/api/users", {**NEW_USER, "username": "by-a-technician"})):
        r = tech.http.request(method, path, json=body)
        assert r.status_code == 403, (method, path, r.status_code, r.text)
    assert tech.ok("GET", "/api/auth/me") == me
    assert "by-a-technician" not in {u["username"] for u in users(admin)}


def test_t02_logging_in_as_someone_new_creates_nobody(server: LiveServer, admin: Admin) -> None:
    before = users(admin)
    r = raw_request(server, "POST", "/api/auth/login",
                    headers={"Content-Type": "application/json"},
                    body=json.dumps({"username": "newcomer", "password": "newcomer-pass"}).encode())
    assert r.status == 401
    assert users(admin) == before

"""TOTP as a second factor: enrolment, login's second step, recovery codes that work once,
bad codes counted toward the account's guard, and a server that requires a second factor
of its administrators refusing their password-only tokens with a clear problem."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from remote_server.testing.liveserver import (
    ApiClient,
    LiveServer,
    ManualClock,
    assert_problem,
    live_server,
)
from remote_server.web import totp
from remote_server.web.ratelimit import MemoryRateLimiter, RateLimiter

from .conftest import ADMIN_PASSWORD, TECH_PASSWORD, server_settings


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    settings = server_settings(tmp_path_factory.mktemp("mfa"), require_second_factor="admin")
    with live_server(settings, limiter=MemoryRateLimiter(clock=ManualClock())) as live:
        yield live


def enrol(client: ApiClient) -> tuple[str, dict[str, Any]]:
    """Enrol TOTP for ``client``'s account: (secret, the enrolment's answer, with the code
    that confirmed it as ``code``)."""
    fresh = client.post("/api/auth/totp/secret")
    assert fresh.status_code == 200, fresh.text
    secret = fresh.json()["secret"]
    assert fresh.json()["otpauth_uri"].startswith("otpauth://totp/")
    code = totp.totp(secret)
    r = client.post("/api/auth/totp", json={"secret": secret, "code": code})
    assert r.status_code == 201, r.text
    return secret, {**r.json(), "code": code}


@pytest.fixture(scope="module")
def admin(server: LiveServer) -> ApiClient:
    """The first admin, enrolled, with a token that carries the second factor."""
    password_only = ApiClient(server).login("admin", ADMIN_PASSWORD)
    _secret, answer = enrol(password_only)
    return ApiClient(server, answer["access_token"])


def technician(admin: ApiClient, role: str = "technician") -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    r = admin.post("/api/users", json={"username": name, "password": TECH_PASSWORD,
                                       "role": role, "permissions": ["view"],
                                       "client_access": ["*"]})
    assert r.status_code == 201, r.text
    return name


def login(server: LiveServer, name: str, **extra: str) -> Any:
    return ApiClient(server).post("/api/auth/login", json={
        "username": name, "password": TECH_PASSWORD, **extra})


def test_a_password_only_admin_token_is_refused_admin_actions_and_viewer_tokens(
        server: LiveServer, admin: ApiClient) -> None:
    name = technician(admin, role="admin")
    only = ApiClient(server, login(server, name).json()["access_token"])
    status = only.get("/api/auth/second-factor").json()
    assert status == {"totp_enrolled": False, "passkeys": 0, "required": True,
                      "token_has_second_factor": False, "recovery_codes_left": 0}
    problem = assert_problem(only.get("/api/users"), 403, "second factor")
    assert problem["type"] == "/api/problems/second-factor-required"
    r = only.post(f"/api/sessions/{uuid.uuid4()}/viewer-token")
    assert assert_problem(r, 403)["type"] == "/api/problems/second-factor-required"
    assert only.get("/api/auth/me").status_code == 200  # its own account stays reachable
    _secret, answer = enrol(only)
    assert len(answer["recovery_codes"]) == 10
    carried = ApiClient(server, answer["access_token"])
    assert carried.get("/api/users").status_code == 200
    assert carried.get("/api/auth/second-factor").json()["token_has_second_factor"]
    assert admin.get("/api/users").status_code == 200


def test_totp_login_needs_the_code_and_refuses_a_wrong_one(
        server: LiveServer, admin: ApiClient) -> None:
    name = technician(admin)
    client = ApiClient(server, login(server, name).json()["access_token"])
    elsewhere = ApiClient(server, login(server, name).json()["access_token"])
    assert client.get("/api/machines").status_code == 200  # technicians are not required
    secret, enrolled = enrol(client)
    assert_problem(elsewhere.get("/api/auth/me"), 401, "ended")  # password-only logins end
    assert_problem(client.get("/api/auth/me"), 401, "ended")  # enrolment replaced its login
    carried = ApiClient(server, enrolled["access_token"])
    again = assert_problem(carried.post("/api/auth/totp", json={
        "secret": secret, "code": totp.totp(secret)}), 409)
    assert again["type"] == "/api/problems/second-factor-enrolled"
    needed = assert_problem(login(server, name), 401, "second factor")
    assert needed["type"] == "/api/problems/second-factor-needed"
    wrong = str((int(totp.totp(secret)) + 1) % 1_000_000).zfill(6)
    bad = assert_problem(login(server, name, otp=wrong), 401)
    assert bad["type"] == "/api/problems/bad-second-factor"
    replayed = assert_problem(login(server, name, otp=enrolled["code"]), 401)
    assert replayed["type"] == "/api/problems/bad-second-factor"  # it confirmed enrolment
    next_code = totp.totp(secret, time.time() + totp.STEP)  # within the drift window
    good = login(server, name, otp=next_code)
    assert good.status_code == 200
    assert_problem(login(server, name, otp=next_code), 401)  # a code works once
    assert ApiClient(server, good.json()["access_token"]).get(
        "/api/auth/second-factor").json()["token_has_second_factor"]
    events = admin.get("/api/events", params={"limit": 100}).json()
    assert any(e["kind"] == "auth.login_failed" and e["target"] == name
               and e["detail"].get("factor") == "second_factor" for e in events)
    assert secret not in str(events)


def test_recovery_codes_work_once(server: LiveServer, admin: ApiClient) -> None:
    name = technician(admin)
    client = ApiClient(server, login(server, name).json()["access_token"])
    _secret, answer = enrol(client)
    code = answer["recovery_codes"][0]
    assert login(server, name, recovery_code=code.upper()).status_code == 200
    reused = assert_problem(login(server, name, recovery_code=code), 401)
    assert reused["type"] == "/api/problems/bad-second-factor"
    fresh = login(server, name, recovery_code=answer["recovery_codes"][1])
    status = ApiClient(server, fresh.json()["access_token"]).get("/api/auth/second-factor")
    assert status.json()["recovery_codes_left"] == 8


def test_bad_codes_count_toward_the_accounts_guard(server: LiveServer,
                                                   admin: ApiClient) -> None:
    name = technician(admin)
    client = ApiClient(server, login(server, name).json()["access_token"])
    secret, _ = enrol(client)
    wrong = str((int(totp.totp(secret)) + 500_000) % 1_000_000).zfill(6)
    for _ in range(RateLimiter.ACCOUNT_FAILURES_BEFORE_GUARD):
        assert login(server, name, otp=wrong).status_code == 401  # each from a new address
    r = login(server, name, otp=totp.totp(secret))  # right code, from an unknown address
    assert_problem(r, 429, "this account")
    events = admin.get("/api/events", params={"limit": 100}).json()
    assert any(e["kind"] == "auth.account_guarded" and e["target"] == name for e in events)


def test_a_reset_removes_the_factor_and_ends_the_tokens(server: LiveServer,
                                                        admin: ApiClient) -> None:
    name = technician(admin)
    client = ApiClient(server, login(server, name).json()["access_token"])
    secret, answer = enrol(client)
    carried = ApiClient(server, answer["access_token"])
    assert_problem(carried.post("/api/auth/totp/reset", json={"password": "not-it-at-all"}),
                   403, "password")
    other = ApiClient(server, login(server, name, otp=totp.totp(
        secret, time.time() + totp.STEP)).json()["access_token"])
    assert carried.post("/api/auth/totp/reset",
                        json={"password": TECH_PASSWORD}).status_code == 204
    assert_problem(carried.get("/api/auth/me"), 401, "revoked")
    assert_problem(other.get("/api/auth/me"), 401, "revoked")
    assert login(server, name).status_code == 200  # the password alone again
    assert secret


def test_logout_ends_every_token_of_the_account(server: LiveServer, admin: ApiClient) -> None:
    name = technician(admin)
    first = ApiClient(server, login(server, name).json()["access_token"])
    second = ApiClient(server, login(server, name).json()["access_token"])
    assert first.post("/api/auth/logout").status_code == 204
    for client in (first, second):
        assert_problem(client.get("/api/auth/me"), 401, "revoked")
    assert ApiClient(server, login(server, name).json()["access_token"]).get(
        "/api/auth/me").status_code == 200
    assert_problem(admin.delete(f"/api/users/{uuid.uuid4()}/second-factor"), 404)


def test_a_user_lists_their_logins_and_ends_one(server: LiveServer, admin: ApiClient) -> None:
    name = technician(admin)
    laptop = ApiClient(server, login(server, name).json()["access_token"])
    phone = ApiClient(server, login(server, name).json()["access_token"])
    listed = laptop.get("/api/auth/sessions").json()
    assert len(listed) == 2 and [s["current"] for s in listed] == [False, True]
    assert not any(s["second_factor"] for s in listed)
    other = next(s["id"] for s in listed if not s["current"])
    assert_problem(admin.delete(f"/api/auth/sessions/{other}"), 404)  # not the admin's
    assert laptop.delete(f"/api/auth/sessions/{other}").status_code == 204
    assert_problem(phone.get("/api/auth/me"), 401, "ended")
    assert laptop.get("/api/auth/me").status_code == 200
    assert [s["current"] for s in laptop.get("/api/auth/sessions").json()] == [True]

"""Login, change of password, the login rate limit and what a login token is good for."""

from __future__ import annotations

import argon2
import pytest
from remote_server.testing.liveserver import ApiClient, LiveServer, ManualClock, assert_problem
from remote_server.web import users

from .conftest import ADMIN_PASSWORD, TECH_PASSWORD, MakeUser


def test_login_answers_a_bearer_token(anon: ApiClient) -> None:
    r = anon.post("/api/auth/login", json={"username": "admin", "password": ADMIN_PASSWORD})
    assert r.status_code == 200
    body = r.json()
    assert body["token_type"] == "bearer" and body["expires_in"] == 8 * 3600
    me = anon.get("/api/auth/me", headers={"Authorization": f"Bearer {body['access_token']}"})
    assert me.status_code == 200
    assert me.json()["username"] == "admin" and me.json()["role"] == "admin"


def test_wrong_password_and_unknown_user_are_the_same_401(anon: ApiClient) -> None:
    for username in ("admin", "nobody"):
        r = anon.post("/api/auth/login", json={"username": username, "password": "wrong-pass"})
        assert_problem(r, 401, "wrong username or password")
        assert r.headers["www-authenticate"] == "Bearer"


def test_an_unknown_user_costs_a_whole_verification() -> None:
    """The hash an unknown username is checked against has the hasher's parameters and
    parses, so verifying it runs Argon2 to the end (a mismatch, as a wrong password is)
    rather than failing at once on its form, which would tell unknown names apart."""
    dummy = users._DUMMY_HASH
    assert argon2.extract_parameters(dummy) == argon2.extract_parameters(
        users._hasher.hash("a password"))
    with pytest.raises(argon2.exceptions.VerifyMismatchError):
        users._hasher.verify(dummy, "a password")


def test_ninth_login_in_a_window_is_429_and_the_next_window_opens(
        server: LiveServer, clock: ManualClock) -> None:
    client = ApiClient(server)
    for _ in range(8):
        r = client.post("/api/auth/login", json={"username": "admin", "password": "nope-nope"})
        assert r.status_code == 401
    r = client.post("/api/auth/login", json={"username": "admin", "password": ADMIN_PASSWORD})
    assert_problem(r, 429)
    assert 1 <= int(r.headers["retry-after"]) <= 60
    assert ApiClient(server).post("/api/auth/login", json={
        "username": "admin", "password": ADMIN_PASSWORD}).status_code == 200, "other IPs pass"
    clock.advance(60)
    r = client.post("/api/auth/login", json={"username": "admin", "password": ADMIN_PASSWORD})
    assert r.status_code == 200


def test_failed_and_good_logins_are_audited(admin: ApiClient, anon: ApiClient) -> None:
    anon.post("/api/auth/login", json={"username": "mallory", "password": "guess-guess"})
    events = admin.get("/api/events", params={"limit": 50}).json()
    failed = [e for e in events if e["kind"] == "auth.login_failed" and e["target"] == "mallory"]
    assert failed and failed[0]["client_ip"] == anon.ip
    assert "guess-guess" not in str(events)
    assert any(e["kind"] == "auth.login" and e["actor"] == "admin" for e in events)


def test_missing_bad_and_wrong_kind_tokens_are_401(server: LiveServer, anon: ApiClient) -> None:
    assert_problem(anon.get("/api/machines"), 401, "bearer")
    for header in ("Bearer", "Bearer garbage", "Basic YWRtaW46eA==", "Bearer a.b.c"):
        r = anon.get("/api/machines", headers={"Authorization": header})
        assert_problem(r, 401)
        assert r.headers["www-authenticate"] == "Bearer"


def test_change_password_voids_older_tokens(server: LiveServer, make_user: MakeUser) -> None:
    user = make_user("changer", permissions=["view"])
    r = user.post("/api/auth/change-password",
                  json={"current_password": "not-the-password", "new_password": "x" * 12})
    assert_problem(r, 403, "current password")
    r = user.post("/api/auth/change-password",
                  json={"current_password": TECH_PASSWORD, "new_password": "brand-new-pass"})
    assert r.status_code == 204
    assert_problem(user.get("/api/auth/me"), 401)
    again = ApiClient(server).login("changer", "brand-new-pass")
    assert again.get("/api/auth/me").status_code == 200


def test_sixth_password_change_in_a_minute_is_429(make_user: MakeUser) -> None:
    user = make_user("hammer", permissions=["view"])
    for _ in range(5):
        r = user.post("/api/auth/change-password",
                      json={"current_password": "wrong-password", "new_password": "y" * 12})
        assert r.status_code == 403
    r = user.post("/api/auth/change-password",
                  json={"current_password": TECH_PASSWORD, "new_password": "y" * 12})
    assert_problem(r, 429)
    assert int(r.headers["retry-after"]) >= 1


def test_disabled_and_deleted_users_lose_their_tokens(admin: ApiClient,
                                                      make_user: MakeUser) -> None:
    user = make_user("leaver", permissions=["view"])
    user_id = user.get("/api/auth/me").json()["id"]
    assert admin.patch(f"/api/users/{user_id}", json={"disabled": True}).status_code == 200
    assert_problem(user.get("/api/auth/me"), 401)
    assert admin.delete(f"/api/users/{user_id}").status_code == 204
    assert_problem(user.get("/api/auth/me"), 401)


def test_login_body_is_validated_naming_the_field(anon: ApiClient) -> None:
    r = anon.post("/api/auth/login", json={"username": "admin"})
    body = assert_problem(r, 422, "password")
    assert body["errors"][0]["field"] == "password"
    r = anon.post("/api/auth/login", json={"username": "admin", "password": 5})
    assert_problem(r, 422, "password")
    r = anon.post("/api/auth/login", json={"username": "admin", "password": "x", "admin": True})
    assert_problem(r, 422, "admin")
    r = anon.post("/api/auth/login", content=b"{not json", headers={
        "content-type": "application/json"})
    assert_problem(r, 400, "JSON")

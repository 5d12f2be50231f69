"""Passkeys (WebAuthn) as a second factor, against a real ``remote-support serve`` process:
registration from the options the server hands out, login's second step with a passkey
(amr ``hwk``), challenges that work once and only for their account and ceremony, the
signature counter, removal by the owner and an administrator's reset, bad assertions
counted toward the account's guard, and an administrator lifting that guard.

The authenticator is :class:`~remote_server.testing.softkey.SoftAuthenticator` (ES256,
``none`` attestation): the server verifies its answers with the same code as a browser's.
The browser's own path is ``plugins/web_console/tests/test_console_passkeys.py``.

The server trusts 127.0.0.1 as a proxy, so every client speaks from its own
``X-Forwarded-For`` address and the shipped login limit (8/min/IP) holds unchanged.
Requests name the server ``localhost`` in ``Host``: WebAuthn refuses IP addresses.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from remote_server.testing.liveserver import assert_problem, fresh_ip
from remote_server.testing.processes import ADMIN_PASSWORD, ServerProcess
from remote_server.testing.softkey import SoftAuthenticator
from remote_server.web.api.passkeys import MAX_PASSKEYS
from remote_server.web.ratelimit import RateLimiter
from webauthn.helpers import bytes_to_base64url as _b64

pytestmark = pytest.mark.slow

PASSWORD = "technician-password-0123"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path_factory.mktemp("passkeys"), trusted_proxies="127.0.0.1",
                            require_second_factor="admin").start()
    yield process
    process.stop()


def client(server: ServerProcess, token: str | None = None, *, host: str | None = None
           ) -> httpx.Client:
    """A client from an address of its own, naming the server ``localhost`` by default."""
    headers = {"X-Forwarded-For": fresh_ip(), "Host": host or f"localhost:{server.port}"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.Client(base_url=server.url, headers=headers, timeout=30)


def origin(server: ServerProcess) -> str:
    return f"http://localhost:{server.port}"


def login(server: ServerProcess, name: str, password: str = PASSWORD,
          **extra: Any) -> httpx.Response:
    return client(server).post("/api/auth/login", json={"username": name,
                                                        "password": password, **extra})


def enrol(server: ServerProcess, token: str, key: SoftAuthenticator,
          name: str = "laptop") -> dict[str, Any]:
    """Register ``key`` with the account of ``token``: the enrolment's answer."""
    me = client(server, token)
    r = me.post("/api/auth/passkeys/options")
    assert r.status_code == 200, r.text
    r = me.post("/api/auth/passkeys", json={"name": name,
                                            "credential": key.create(r.json()["options"])})
    assert r.status_code == 201, r.text
    answer: dict[str, Any] = r.json()
    return answer


def passkey_login(server: ServerProcess, name: str, key: SoftAuthenticator,
                  password: str = PASSWORD, **change: Any) -> httpx.Response:
    """Login's two steps: the password (answered with a challenge), then the passkey."""
    r = login(server, name, password)
    problem = assert_problem(r, 401, "passkey")
    assert problem["type"] == "/api/problems/second-factor-needed"
    assertion = key.get(problem["passkey_options"], **change)
    return login(server, name, password, passkey=assertion)


@pytest.fixture(scope="module")
def admin(server: ServerProcess) -> httpx.Client:
    """The first admin, who must have a second factor: a password-only login reaches only
    its own account, registers a passkey, and the token that answers carries it."""
    r = login(server, "admin", ADMIN_PASSWORD)
    assert r.status_code == 200, r.text
    password_only = client(server, r.json()["access_token"])
    assert password_only.get("/api/users").status_code == 403
    answer = enrol(server, r.json()["access_token"], SoftAuthenticator(origin(server)))
    assert_problem(password_only.get("/api/auth/me"), 401, "ended")
    admin = client(server, answer["access_token"])
    assert admin.get("/api/users").status_code == 200
    return admin


def technician(admin: httpx.Client) -> tuple[str, str]:
    """A new technician: (name, id)."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    r = admin.post("/api/users", json={"username": name, "password": PASSWORD,
                                       "role": "technician", "permissions": ["view"],
                                       "client_access": ["*"]})
    assert r.status_code == 201, r.text
    return name, r.json()["id"]


def token_of(r: httpx.Response) -> str:
    assert r.status_code == 200, r.text
    return str(r.json()["access_token"])


def test_a_passkey_is_registered_and_logs_in_as_the_second_step(
        server: ServerProcess, admin: httpx.Client) -> None:
    name, _ = technician(admin)
    token = token_of(login(server, name))
    other = client(server, token_of(login(server, name)))
    me = client(server, token)
    assert me.get("/api/auth/passkeys").json() == []
    options = me.post("/api/auth/passkeys/options").json()["options"]
    assert options["rp"] == {"id": "localhost", "name": "Remote support"}
    assert options["user"]["name"] == name and options["excludeCredentials"] == []
    key = SoftAuthenticator(origin(server))
    r = me.post("/api/auth/passkeys", json={"name": "work laptop",
                                            "credential": key.create(options)})
    assert r.status_code == 201, r.text
    enrolled = r.json()
    assert enrolled["passkey"]["name"] == "work laptop"
    assert enrolled["passkey"]["transports"] == ["internal"]
    assert_problem(me.get("/api/auth/me"), 401, "ended")  # the password-only logins end
    assert_problem(other.get("/api/auth/me"), 401, "ended")
    carried = client(server, enrolled["access_token"])
    status = carried.get("/api/auth/second-factor").json()
    assert status["passkeys"] == 1 and status["token_has_second_factor"]
    assert not status["totp_enrolled"]

    needed = assert_problem(login(server, name), 401, "passkey")
    assert needed["type"] == "/api/problems/second-factor-needed"
    assert needed["methods"] == ["passkey"]
    allowed = needed["passkey_options"]["allowCredentials"]
    assert [c["id"] for c in allowed] == [_b64(key.credential_id)]
    assertion = key.get(needed["passkey_options"])
    good = login(server, name, passkey=assertion)
    fresh = client(server, token_of(good))
    assert fresh.get("/api/auth/second-factor").json()["token_has_second_factor"]
    sessions = fresh.get("/api/auth/sessions").json()
    assert any(s["current"] and s["second_factor"] for s in sessions)
    replayed = assert_problem(login(server, name, passkey=assertion), 401)  # works once
    assert replayed["type"] == "/api/problems/bad-second-factor"
    listed = fresh.get("/api/auth/passkeys").json()
    assert len(listed) == 1 and listed[0]["last_used_at"] is not None
    events = admin.get("/api/events", params={"limit": 200}).json()
    assert any(e["kind"] == "auth.passkey_added" and e["actor"] == name for e in events)
    assert any(e["kind"] == "auth.login" and e["actor"] == name
               and e["detail"].get("amr") == ["pwd", "hwk"] for e in events)


def test_assertions_that_do_not_prove_the_passkey_are_refused(
        server: ServerProcess, admin: httpx.Client) -> None:
    name, _ = technician(admin)
    key = SoftAuthenticator(origin(server))
    enrol(server, token_of(login(server, name)), key)
    stranger = SoftAuthenticator(origin(server))

    def refused(assertion: dict[str, Any]) -> None:
        problem = assert_problem(login(server, name, passkey=assertion), 401)
        assert problem["type"] == "/api/problems/bad-second-factor"

    options = assert_problem(login(server, name), 401)["passkey_options"]
    refused(key.get({**options, "challenge": _b64(b"a challenge never handed out")}))
    refused(stranger.get(options))  # another authenticator's key
    options = assert_problem(login(server, name), 401)["passkey_options"]
    wrong_site = SoftAuthenticator("http://phishing.example")
    wrong_site.key, wrong_site.credential_id = key.key, key.credential_id
    refused(wrong_site.get(options))  # signed for another origin
    options = assert_problem(login(server, name), 401)["passkey_options"]
    at_address = client(server, host=f"127.0.0.1:{server.port}").post("/api/auth/login", json={
        "username": name, "password": PASSWORD, "passkey": key.get(options)})
    assert assert_problem(at_address, 401)["type"] == "/api/problems/bad-second-factor"
    # Another account's challenge does not log this one in.
    other, _ = technician(admin)
    other_key = SoftAuthenticator(origin(server))
    enrol(server, token_of(login(server, other)), other_key)
    foreign = assert_problem(login(server, other), 401)["passkey_options"]
    refused(key.get(foreign))
    # The counter must rise: an authenticator that reports an old count is a clone.
    assert passkey_login(server, name, key).status_code == 200
    assert passkey_login(server, name, key, count=key.sign_count).status_code == 401
    assert passkey_login(server, name, key).status_code == 200
    events = admin.get("/api/events", params={"limit": 200}).json()
    assert sum(e["kind"] == "auth.login_failed" and e["target"] == name
               and e["detail"].get("factor") == "second_factor" for e in events) >= 5


def test_registration_refusals(server: ServerProcess, admin: httpx.Client) -> None:
    name, _ = technician(admin)
    token = token_of(login(server, name))
    me = client(server, token)
    key = SoftAuthenticator(origin(server))
    options = me.post("/api/auth/passkeys/options").json()["options"]
    forged = me.post("/api/auth/passkeys", json={
        "name": "x", "credential": key.create(options, rp_id="evil.example")})
    assert assert_problem(forged, 422, "credential")["errors"][0]["field"] == "credential"
    used = me.post("/api/auth/passkeys", json={"name": "x", "credential": key.create(options)})
    assert_problem(used, 422, "challenge")  # the forged answer used the challenge up
    malformed = me.post("/api/auth/passkeys", json={"name": "x", "credential": {"id": "!"}})
    assert_problem(malformed, 422)
    at_address = client(server, token, host=f"127.0.0.1:{server.port}")
    problem = assert_problem(at_address.post("/api/auth/passkeys/options"), 409, "host name")
    assert problem["type"] == "/api/problems/passkeys-unavailable"
    answer = enrol(server, token, key)
    again = client(server, answer["access_token"])
    options = again.post("/api/auth/passkeys/options").json()["options"]
    assert [c["id"] for c in options["excludeCredentials"]] == [_b64(key.credential_id)]
    twice = again.post("/api/auth/passkeys", json={"name": "y",
                                                   "credential": key.create(options)})
    assert assert_problem(twice, 409)["type"] == "/api/problems/passkey-registered"
    # A second authenticator may be added, from a login that carries the first.
    enrol(server, answer["access_token"], SoftAuthenticator(origin(server)), "phone")
    assert client(server, answer["access_token"]).get("/api/auth/me").status_code == 401


def test_the_owner_removes_a_passkey_and_an_admin_reset_removes_them_all(
        server: ServerProcess, admin: httpx.Client) -> None:
    name, user_id = technician(admin)
    laptop, phone = SoftAuthenticator(origin(server)), SoftAuthenticator(origin(server))
    first = enrol(server, token_of(login(server, name)), laptop)
    second = enrol(server, first["access_token"], phone, "phone")
    me = client(server, second["access_token"])
    assert [p["name"] for p in me.get("/api/auth/passkeys").json()] == ["laptop", "phone"]
    assert_problem(admin.delete(f"/api/auth/passkeys/{first['passkey']['id']}"), 404)
    assert me.delete(f"/api/auth/passkeys/{first['passkey']['id']}").status_code == 204
    assert_problem(me.delete(f"/api/auth/passkeys/{first['passkey']['id']}"), 404)
    assert passkey_login(server, name, laptop).status_code == 401  # removed
    other = client(server, token_of(passkey_login(server, name, phone)))
    assert admin.delete(f"/api/users/{user_id}/second-factor").status_code == 204
    for revoked in (me, other):
        assert_problem(revoked.get("/api/auth/me"), 401, "revoked")
    after = client(server, token_of(login(server, name)))  # the password alone again
    assert after.get("/api/auth/passkeys").json() == []
    events = admin.get("/api/events", params={"limit": 200}).json()
    assert any(e["kind"] == "auth.passkey_removed" and e["actor"] == name for e in events)
    assert any(e["kind"] == "auth.totp_reset" and e["target"] == user_id
               and e["detail"].get("passkeys_removed") == 1 for e in events)


def test_bad_assertions_raise_the_guard_and_an_admin_lifts_it(
        server: ServerProcess, admin: httpx.Client) -> None:
    name, user_id = technician(admin)
    key = SoftAuthenticator(origin(server))
    enrol(server, token_of(login(server, name)), key)
    thief = SoftAuthenticator(origin(server))
    thief.credential_id = key.credential_id  # the right id, the wrong private key
    for _ in range(RateLimiter.ACCOUNT_FAILURES_BEFORE_GUARD):
        assert passkey_login(server, name, thief).status_code == 401  # each from a new address
    assert_problem(login(server, name), 429, "this account")  # even the owner, from elsewhere
    name_b, _ = technician(admin)
    assert_problem(client(server, token_of(login(server, name_b))).post(
        f"/api/users/{user_id}/unlock"), 403)
    r = admin.post(f"/api/users/{user_id}/unlock")
    assert r.status_code == 200, r.text
    assert r.json() == {"was_guarded": True}
    assert passkey_login(server, name, key).status_code == 200  # from a new address
    assert admin.post(f"/api/users/{user_id}/unlock").json() == {"was_guarded": False}
    assert_problem(admin.post(f"/api/users/{uuid.uuid4()}/unlock"), 404)
    events = admin.get("/api/events", params={"limit": 300}).json()
    assert any(e["kind"] == "auth.account_guarded" and e["target"] == name for e in events)
    assert any(e["kind"] == "auth.account_unlocked" and e["target"] == name
               and e["actor"] == "admin" and e["detail"] == {"was_guarded": True}
               for e in events)


def test_an_account_holds_at_most_ten_passkeys(server: ServerProcess,
                                               admin: httpx.Client) -> None:
    name, _ = technician(admin)
    token = token_of(login(server, name))
    for number in range(MAX_PASSKEYS):
        token = enrol(server, token, SoftAuthenticator(origin(server)),
                      f"key {number}")["access_token"]
    me = client(server, token)
    assert len(me.get("/api/auth/passkeys").json()) == MAX_PASSKEYS
    problem = assert_problem(me.post("/api/auth/passkeys/options"), 409, "remove one first")
    assert problem["type"] == "/api/problems/passkey-limit"
    first = me.get("/api/auth/passkeys").json()[0]["id"]
    assert me.delete(f"/api/auth/passkeys/{first}").status_code == 204
    enrol(server, token, SoftAuthenticator(origin(server)), "a new one")

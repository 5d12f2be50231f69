"""Support codes: format and randomness, lifecycle, validation limits and lockout (SPEC 8)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from remote_server.testing.liveserver import (
    ApiClient,
    LiveServer,
    ManualClock,
    assert_problem,
    live_server,
)

from remote_core.supportcode import ALPHABET, generate_support_code

from .conftest import ADMIN_PASSWORD, MakeUser, server_settings

SYMBOL = "[23456789ABCDEFGHJKMNPQRSTUVWXYZ]"  # SPEC 8, spelled out rather than imported
FORMAT = re.compile(rf"^{SYMBOL}{{3}}-{SYMBOL}{{3}}-{SYMBOL}{{3}}$")


def test_format_and_alphabet() -> None:
    assert len(ALPHABET) == 31 and not set("0O1IL") & set(ALPHABET)
    assert all(FORMAT.match(generate_support_code()) for _ in range(1000))


def test_every_position_is_uniform_over_the_alphabet() -> None:
    """Chi-square per position over 31 symbols (30 degrees of freedom).

    The critical value at p = 1e-6 is about 76; a fair source exceeds it in
    one run out of a million per position, a biased one (say ``% 31`` of a
    byte) far more often.
    """
    n = 31 * 400
    codes = [generate_support_code().replace("-", "") for _ in range(n)]
    expected = n / 31
    for position in range(9):
        counts = Counter(code[position] for code in codes)
        assert set(counts) == set(ALPHABET)
        chi2 = sum((counts[c] - expected) ** 2 / expected for c in ALPHABET)
        assert chi2 < 76, (position, chi2)


def test_create_list_cancel(tech: ApiClient, admin: ApiClient, make_user: MakeUser) -> None:
    r = tech.post("/api/codes")
    assert r.status_code == 201, r.text
    code = r.json()
    assert FORMAT.match(code["code"]) and code["status"] == "pending"
    assert code["technician"] == "tech"
    mine = {c["code"] for c in tech.get("/api/codes").json()}
    assert code["code"] in mine
    assert code["code"] in {c["code"] for c in admin.get("/api/codes").json()}
    other = make_user("othertech", permissions=["support_codes"])
    assert code["code"] not in {c["code"] for c in other.get("/api/codes").json()}
    assert_problem(other.delete(f"/api/codes/{code['code']}"), 404)
    assert tech.delete(f"/api/codes/{code['code']}").status_code == 204
    listed = {c["code"]: c for c in tech.get("/api/codes").json()}
    assert listed[code["code"]]["status"] == "cancelled"
    assert_problem(tech.delete(f"/api/codes/{code['code']}"), 409)
    short = tech.post("/api/codes", json={"expires_in": 120}).json()
    assert short["status"] == "pending"
    assert_problem(tech.post("/api/codes", json={"expires_in": 5}), 422, "expires_in")


def test_creating_codes_needs_the_permission(make_user: MakeUser) -> None:
    viewer = make_user("viewonly", permissions=["view"])
    assert_problem(viewer.post("/api/codes"), 403, "support_codes")


def test_validation_never_consumes(server: LiveServer, tech: ApiClient) -> None:
    code = tech.post("/api/codes").json()["code"]
    client = ApiClient(server)
    for typed in (code, code.lower(), code.replace("-", "")):
        r = client.post("/api/codes/validate", json={"code": typed})
        assert r.status_code == 200, r.text
        assert r.json()["valid"] is True and r.json()["technician"] == "tech"
    listed = {c["code"]: c for c in tech.get("/api/codes").json()}
    assert listed[code]["status"] == "pending" and listed[code]["consumed_at"] is None


def test_unknown_cancelled_and_malformed_codes_are_404(server: LiveServer,
                                                       tech: ApiClient) -> None:
    client = ApiClient(server)
    cancelled = tech.post("/api/codes").json()["code"]
    tech.delete(f"/api/codes/{cancelled}")
    for code in ("ZZZ-ZZZ-ZZZ", cancelled, "not a code", "00O-111-LLL"):
        assert_problem(client.post("/api/codes/validate", json={"code": code}), 404)
    assert_problem(client.post("/api/codes/validate", json={"code": 123}), 422, "code")


def test_failures_are_counted_in_a_window_that_ends(
        server: LiveServer, tech: ApiClient, clock: ManualClock) -> None:
    """Nine failures, then a quiet quarter of an hour: the count starts again."""
    good = tech.post("/api/codes", json={"expires_in": 86_400}).json()["code"]
    client = ApiClient(server)
    for _ in range(9):
        assert client.post("/api/codes/validate", json={"code": "ZZZ-ZZZ-ZZZ"}).status_code == 404
    clock.advance(15 * 60)
    for _ in range(9):
        assert client.post("/api/codes/validate", json={"code": "ZZZ-ZZZ-ZZZ"}).status_code == 404
    assert client.post("/api/codes/validate", json={"code": good}).status_code == 200


def test_sixteenth_validation_in_a_minute_is_429(server: LiveServer, tech: ApiClient,
                                                 clock: ManualClock) -> None:
    code = tech.post("/api/codes").json()["code"]
    client = ApiClient(server)
    for _ in range(15):
        assert client.post("/api/codes/validate", json={"code": code}).status_code == 200
    r = client.post("/api/codes/validate", json={"code": code})
    assert_problem(r, 429)
    assert 1 <= int(r.headers["retry-after"]) <= 60
    clock.advance(61)
    assert client.post("/api/codes/validate", json={"code": code}).status_code == 200


def test_ten_failures_lock_the_ip_out_for_fifteen_minutes(
        server: LiveServer, tech: ApiClient, clock: ManualClock) -> None:
    good = tech.post("/api/codes", json={"expires_in": 86_400}).json()["code"]
    client = ApiClient(server)
    for _ in range(9):
        assert client.post("/api/codes/validate", json={"code": "ZZZ-ZZZ-ZZZ"}).status_code == 404
    assert client.post("/api/codes/validate", json={"code": good}).status_code == 200
    clock.advance(61)  # a fresh 15/min window, so only the lockout can refuse below
    # The success between them does not reset the count: the tenth failure locks.
    assert client.post("/api/codes/validate", json={"code": "ZZZ-ZZZ-ZZZ"}).status_code == 404
    r = client.post("/api/codes/validate", json={"code": good})
    assert_problem(r, 429)
    assert 14 * 60 < int(r.headers["retry-after"]) <= 15 * 60
    assert ApiClient(server).post("/api/codes/validate",
                                  json={"code": good}).status_code == 200, "other IPs pass"
    clock.advance(61)
    assert_problem(client.post("/api/codes/validate", json={"code": good}), 429)
    clock.advance(15 * 60 - 62)
    assert_problem(client.post("/api/codes/validate", json={"code": good}), 429)
    clock.advance(1)
    assert client.post("/api/codes/validate", json={"code": good}).status_code == 200


def audit_events(admin: ApiClient, kind: str) -> list[dict[str, object]]:
    events = admin.get("/api/events", params={"limit": 500}).json()
    return [e for e in events if e["kind"] == kind]


def test_code_creation_cancellation_and_lockouts_are_audited(
        server: LiveServer, tech: ApiClient, admin: ApiClient, clock: ManualClock) -> None:
    code = tech.post("/api/codes").json()["code"]
    assert tech.delete(f"/api/codes/{code}").status_code == 204
    for kind in ("support_code.created", "support_code.cancelled"):
        [event] = [e for e in audit_events(admin, kind) if e["target"] == f"***-***-{code[-3:]}"]
        assert event["actor"] == "tech" and event["client_ip"] == tech.ip
    assert code not in str(admin.get("/api/events", params={"limit": 500}).json())
    client = ApiClient(server)
    clock.advance(61)
    for _ in range(10):
        assert client.post("/api/codes/validate", json={"code": "ZZZ-ZZZ-ZZZ"}).status_code == 404
    [lockout] = [e for e in audit_events(admin, "support_code.lockout")
                 if e["client_ip"] == client.ip]
    assert lockout["detail"]["via"] == "rest"


def test_without_a_method_that_accepts_codes_none_is_issued(tmp_path: Path) -> None:
    # A deployment without auth_supportcode never hands an end user a code that no
    # loaded method would accept.
    settings = server_settings(tmp_path, block_plugins=("auth_supportcode",))
    with live_server(settings) as server:
        admin = ApiClient(server).login("admin", ADMIN_PASSWORD)
        problem = assert_problem(admin.post("/api/codes", json={}), 501,
                                 "accepts support codes")
        assert problem["type"].endswith("/not-implemented")
        assert admin.get("/api/codes").json() == []

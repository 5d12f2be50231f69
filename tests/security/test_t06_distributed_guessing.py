"""T06: distributed password guessing against one account (ASVS 6.1.1; AiFw #165).

Every per-address limit lets 100 addresses try 8 passwords a minute each. The
account's guard counts failed logins to one account from all addresses: past
20 within 15 minutes, for 15 minutes only the addresses the account has logged
in from before may try a password; every other one gets 429 with
``Retry-After`` and its password is not even checked, so the guesser learns
nothing, while the owner at their usual address still gets in. Each request
speaks from its own address (the suite's trusted-proxy deviation); the rate
limiter's clock is the test's, so the window's end is reached without waiting.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest
from remote_server.testing.liveserver import LiveServer, ManualClock, fresh_ip, live_server
from remote_server.web.ratelimit import MemoryRateLimiter, RateLimiter

from .conftest import Admin, relay_settings

THRESHOLD = RateLimiter.ACCOUNT_FAILURES_BEFORE_GUARD
PASSWORD = "the-owners-own-password"
CLOCK = ManualClock()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(relay_settings(tmp_path_factory.mktemp("t06")),
                     limiter=MemoryRateLimiter(CLOCK)) as live:
        yield live


def _owner(server: LiveServer) -> tuple[str, str]:
    """A technician who has logged in once, from the address returned."""
    admin = Admin(server)
    name = f"owner-{uuid.uuid4().hex[:8]}"
    admin.ok("POST", "/api/users", 201, json={"username": name, "password": PASSWORD,
                                              "role": "technician", "permissions": ["view"]})
    home = fresh_ip()
    assert _login(server, name, PASSWORD, home).status_code == 200
    return name, home


def _login(server: LiveServer, username: str, password: str, address: str) -> httpx.Response:
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        return _post(http, username, password, address)


def _post(http: httpx.Client, username: str, password: str, address: str) -> httpx.Response:
    return http.post("/api/auth/login", json={"username": username, "password": password},
                     headers={"X-Forwarded-For": address})


def _guess(server: LiveServer, username: str, addresses: int = 100, attempts: int = 8, *,
           right_last: bool = False) -> Counter[int]:
    """``addresses`` x ``attempts`` wrong passwords (with ``right_last``, the last of each
    address is the right one)."""
    statuses: Counter[int] = Counter()
    http = httpx.Client(base_url=server.base_url, timeout=30)
    for _ in range(addresses):
        address = fresh_ip()
        for n in range(attempts):
            password = PASSWORD if right_last and n == attempts - 1 else f"guess-{n}"
            r = _post(http, username, password, address)
            if r.status_code == 429:
                assert int(r.headers["Retry-After"]) > 0
                assert r.headers["content-type"].startswith("application/problem+json")
            statuses[r.status_code] += 1
    http.close()
    return statuses


def test_t06_distributed_guessing_is_stopped_and_the_owner_still_gets_in(
        guarded: LiveServer) -> None:
    name, home = _owner(guarded)
    statuses = _guess(guarded, name, right_last=True)
    # Each address's 8th try is the right password, so a few of the first twenty hit it
    # while the guard was down; after the twentieth failure nobody new gets in.
    assert statuses[401] == THRESHOLD, statuses
    assert statuses[429] >= 800 - THRESHOLD - 3 and statuses[200] <= 3, statuses
    assert _login(guarded, name, PASSWORD, fresh_ip()).status_code == 429  # even the truth
    assert _login(guarded, name, PASSWORD, home).status_code == 200  # the owner, at home
    assert _login(guarded, name, "wrong", home).status_code == 401  # checked, not guarded
    assert _login(guarded, "admin", "relay-admin-password", fresh_ip()).status_code == 200
    events = Admin(guarded).ok("GET", "/api/events", params={"limit": 100})
    raised = [e for e in events if e["kind"] == "auth.account_guarded" and e["target"] == name]
    assert len(raised) == 1 and raised[0]["detail"]["failures"] == THRESHOLD


def test_t06_an_unknown_name_is_guarded_alike(guarded: LiveServer) -> None:
    """The guard does not tell which accounts exist."""
    statuses = _guess(guarded, f"nobody-{uuid.uuid4().hex[:8]}", addresses=30, attempts=1)
    assert statuses == Counter({401: THRESHOLD, 429: 30 - THRESHOLD})


def test_t06_the_guard_ends_with_its_window(guarded: LiveServer) -> None:
    name, _home = _owner(guarded)
    _guess(guarded, name, addresses=THRESHOLD + 2, attempts=1)
    elsewhere = fresh_ip()
    assert _login(guarded, name, PASSWORD, elsewhere).status_code == 429
    CLOCK.advance(RateLimiter.ACCOUNT_GUARD_SECONDS)
    assert _login(guarded, name, "wrong", fresh_ip()).status_code == 401
    assert _login(guarded, name, PASSWORD, elsewhere).status_code == 200

"""T05: ``X-Forwarded-For`` neither resets a rate limit nor names the client in the audit log,
unless it comes from a configured trusted proxy (rustdesk-server #634; ASVS 15.3.4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from remote_server.testing.deviations import test_settings
from remote_server.testing.liveserver import live_server

from .conftest import ADMIN_PASSWORD

LOGIN_LIMIT = 8  # SPEC 8: per minute and client address


def login(http: httpx.Client, username: str, password: str, forwarded: str) -> httpx.Response:
    return http.post("/api/auth/login", json={"username": username, "password": password},
                     headers={"X-Forwarded-For": forwarded})


def failed_logins(http: httpx.Client, token: str) -> list[dict[str, Any]]:
    events = http.get("/api/events", params={"limit": 500},
                      headers={"Authorization": f"Bearer {token}"}).json()
    return [e for e in events if e["kind"] == "auth.login_failed"]


def test_t05_an_untrusted_peer_cannot_rotate_its_way_past_the_login_limit(
        tmp_path: Path) -> None:
    settings = test_settings(database_url=f"sqlite:///{tmp_path / 'xff.db'}",
                             admin_password=ADMIN_PASSWORD)  # no trusted proxy: the default
    with live_server(settings) as server, httpx.Client(base_url=server.base_url,
                                                       timeout=30) as http:
        r = login(http, "admin", ADMIN_PASSWORD, "203.0.113.200")
        token = r.json()["access_token"]
        forged = [f"203.0.113.{n}" for n in range(1, LOGIN_LIMIT)]
        for n, address in enumerate(forged):
            assert login(http, f"rotating-{n}", "wrong-password", address).status_code == 401
        # The ninth login of this peer in the minute, from a "new" address, right password.
        r = login(http, "admin", ADMIN_PASSWORD, "203.0.113.99")
        assert r.status_code == 429, r.text
        audited = failed_logins(http, token)
        assert len(audited) == len(forged)
        assert {e["client_ip"] for e in audited} == {"127.0.0.1"}, "the peer, not its claim"
        assert not any(a in str(audited) for a in forged)


def test_t05_behind_a_trusted_proxy_each_client_has_its_own_limit_and_name(
        tmp_path: Path) -> None:
    settings = test_settings(database_url=f"sqlite:///{tmp_path / 'xff.db'}",
                             admin_password=ADMIN_PASSWORD, trusted_proxies=("127.0.0.1",))
    with live_server(settings) as server, httpx.Client(base_url=server.base_url,
                                                       timeout=30) as http:
        token = login(http, "admin", ADMIN_PASSWORD, "198.51.100.1").json()["access_token"]
        # Many clients behind the proxy: none is limited by the others' attempts.
        for n in range(2, 2 + LOGIN_LIMIT + 2):
            assert login(http, f"client-{n}", "wrong-password",
                         f"198.51.100.{n}").status_code == 401
        # One client is limited on its own, even when it prepends an address of its choice.
        for _ in range(LOGIN_LIMIT):
            assert login(http, "one-client", "wrong-password",
                         "6.6.6.6, 198.51.100.77").status_code == 401
        assert login(http, "admin", ADMIN_PASSWORD, "198.51.100.77").status_code == 429
        audited = {e["target"]: e["client_ip"] for e in failed_logins(http, token)}
        assert audited["client-5"] == "198.51.100.5"
        assert audited["one-client"] == "198.51.100.77"
        assert "6.6.6.6" not in audited.values()

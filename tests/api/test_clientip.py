"""The client address: the socket peer, X-Forwarded-For only from trusted proxies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from remote_server.settings import ServerSettings
from remote_server.testing.processes import ServerProcess
from remote_server.web.clientip import client_ip


def scope(peer: str, *forwarded: str) -> dict[str, Any]:
    headers = [(b"x-forwarded-for", f.encode()) for f in forwarded]
    return {"type": "http", "client": (peer, 50000), "headers": headers}


def test_without_trusted_proxies_the_header_is_ignored() -> None:
    assert client_ip(scope("203.0.113.9", "1.2.3.4"), ServerSettings()) == "203.0.113.9"


def test_a_trusted_proxy_passes_the_client_on() -> None:
    settings = ServerSettings().replace(trusted_proxies=("10.0.0.0/8", "127.0.0.1"))
    assert client_ip(scope("127.0.0.1", "198.51.100.7"), settings) == "198.51.100.7"
    # A chain of trusted proxies is walked from the right.
    assert client_ip(scope("127.0.0.1", "198.51.100.7, 10.1.2.3"), settings) == "198.51.100.7"
    assert client_ip(scope("127.0.0.1", "198.51.100.7", "10.1.2.3"), settings) == "198.51.100.7"


def test_a_client_cannot_prepend_its_own_choice() -> None:
    settings = ServerSettings().replace(trusted_proxies=("127.0.0.1",))
    spoofed = scope("127.0.0.1", "6.6.6.6, 198.51.100.7")
    assert client_ip(spoofed, settings) == "198.51.100.7"


def test_an_untrusted_peer_is_believed_only_about_itself() -> None:
    settings = ServerSettings().replace(trusted_proxies=("127.0.0.1",))
    assert client_ip(scope("203.0.113.9", "1.2.3.4"), settings) == "203.0.113.9"


def test_garbage_in_the_header_is_not_believed() -> None:
    settings = ServerSettings().replace(trusted_proxies=("127.0.0.1",))
    assert client_ip(scope("127.0.0.1", "not-an-ip"), settings) == "127.0.0.1"
    assert client_ip(scope("127.0.0.1"), settings) == "127.0.0.1"
    assert client_ip({"type": "http", "headers": []}, settings) == "unknown"


def test_ipv6_networks() -> None:
    settings = ServerSettings().replace(trusted_proxies=("::1", "fd00::/8"))
    assert client_ip(scope("::1", "2001:db8::5, fd00::2"), settings) == "2001:db8::5"


@pytest.mark.slow
def test_a_proxy_nobody_trusts_is_named_once_in_the_log(tmp_path: Path) -> None:
    """Shipped defaults, clients "behind a proxy": they share its limits, and the log says
    so once, with the setting that fixes it."""
    server = ServerProcess(tmp_path).start()
    try:
        with httpx.Client(base_url=server.url, timeout=10) as http:
            answers = [http.post("/api/auth/login", headers={"X-Forwarded-For": f"198.51.100.{n}"},
                                 json={"username": "admin", "password": "wrong"}).status_code
                       for n in range(1, 10)]
            assert answers == [401] * 8 + [429]  # nine clients, one address: 8/min
            assert http.get("/healthz", headers={"X-Forwarded-For": "198.51.100.99"}).is_success
    finally:
        server.stop()
    log = server.log.read_text()
    warnings = [line for line in log.splitlines() if "X-Forwarded-For" in line]
    assert len(warnings) == 1, warnings
    assert "WARNING" in warnings[0] and "REMOTE_SUPPORT_TRUSTED_PROXIES" in warnings[0]
    assert "127.0.0.1" in warnings[0] and "rate limits and lockouts" in warnings[0]

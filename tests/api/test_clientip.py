"""The client address: the socket peer, X-Forwarded-For only from trusted proxies."""

from __future__ import annotations

from typing import Any

from remote_core.server.clientip import client_ip
from remote_core.settings import Settings


def scope(peer: str, *forwarded: str) -> dict[str, Any]:
    headers = [(b"x-forwarded-for", f.encode()) for f in forwarded]
    return {"type": "http", "client": (peer, 50000), "headers": headers}


def test_without_trusted_proxies_the_header_is_ignored() -> None:
    assert client_ip(scope("203.0.113.9", "1.2.3.4"), Settings()) == "203.0.113.9"


def test_a_trusted_proxy_passes_the_client_on() -> None:
    settings = Settings().replace(trusted_proxies=("10.0.0.0/8", "127.0.0.1"))
    assert client_ip(scope("127.0.0.1", "198.51.100.7"), settings) == "198.51.100.7"
    # A chain of trusted proxies is walked from the right.
    assert client_ip(scope("127.0.0.1", "198.51.100.7, 10.1.2.3"), settings) == "198.51.100.7"
    assert client_ip(scope("127.0.0.1", "198.51.100.7", "10.1.2.3"), settings) == "198.51.100.7"


def test_a_client_cannot_prepend_its_own_choice() -> None:
    settings = Settings().replace(trusted_proxies=("127.0.0.1",))
    spoofed = scope("127.0.0.1", "6.6.6.6, 198.51.100.7")
    assert client_ip(spoofed, settings) == "198.51.100.7"


def test_an_untrusted_peer_is_believed_only_about_itself() -> None:
    settings = Settings().replace(trusted_proxies=("127.0.0.1",))
    assert client_ip(scope("203.0.113.9", "1.2.3.4"), settings) == "203.0.113.9"


def test_garbage_in_the_header_is_not_believed() -> None:
    settings = Settings().replace(trusted_proxies=("127.0.0.1",))
    assert client_ip(scope("127.0.0.1", "not-an-ip"), settings) == "127.0.0.1"
    assert client_ip(scope("127.0.0.1"), settings) == "127.0.0.1"
    assert client_ip({"type": "http", "headers": []}, settings) == "unknown"


def test_ipv6_networks() -> None:
    settings = Settings().replace(trusted_proxies=("::1", "fd00::/8"))
    assert client_ip(scope("::1", "2001:db8::5, fd00::2"), settings) == "2001:db8::5"

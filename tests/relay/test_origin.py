"""Which pages get a viewer socket (CONTRACT 1), and how a refused page learns why.

A TLS terminator in front of the server means the server speaks plain HTTP
while the browser's page is ``https://<Host>``. These tests speak to the
server exactly as such a terminator does: a plain TCP one forwards the
browser's bytes (``Host`` and ``Origin`` as the browser sent them), an HTTP
proxy adds ``X-Forwarded-Proto``. The real terminators are in
``tests/deploy/test_tls_terminator.py``.
"""

from __future__ import annotations

import logging
import socket
import uuid
from collections.abc import Iterator

import httpx
import pytest
from remote_server.testing.liveserver import LiveServer, live_server
from remote_server.web.origin import accepted_origins_text, own_host_names, same_host
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from remote_core.protocol import pb

from .conftest import Peer, fresh_ip, relay_settings

pytestmark = pytest.mark.anyio

SETTING = "REMOTE_SUPPORT_PUBLIC_ORIGINS"


def host(server: LiveServer) -> str:
    return f"127.0.0.1:{server.port}"


def foreign() -> str:
    """A page origin no test has used (refusals are logged once per origin and process)."""
    return f"https://console-{uuid.uuid4().hex[:8]}.example"


async def admitted(server: LiveServer, origin: str, host_header: str | None = None,
                   **headers: str) -> bool:
    """True when the upgrade succeeds (the token is judged after, and refused).

    ``host_header`` is the name the page used for the server; the socket still
    goes to the live server's own address, as it does after a DNS lookup.
    """
    try:
        if host_header is None:
            peer = await Peer.open(server, "/ws/viewer", origin=origin, headers=headers)
        else:
            peer = Peer(await connect(f"ws://{host_header}/ws/viewer", host="127.0.0.1",
                                      port=server.port, origin=origin, open_timeout=10,
                                      additional_headers={"X-Forwarded-For": fresh_ip()}))
    except InvalidStatus as refused:
        assert refused.response.status_code == 403
        return False
    await peer.send("session_request", pb.SessionRequest(session_token="x"))
    assert not (await peer.response()).success
    await peer.close()
    return True


def decision(server: LiveServer, origin: str | None, **headers: str) -> dict[str, object]:
    sent = {**({"Origin": origin} if origin is not None else {}), **headers}
    r = httpx.post(f"{server.base_url}/api/viewer-origin", headers=sent, timeout=10)
    assert r.status_code == 200, r.text
    body: dict[str, object] = r.json()
    return body


async def test_an_https_page_of_the_servers_host_behind_a_tcp_terminator(server) -> None:
    # The terminator forwards the browser's request untouched; the server saw http.
    origin = f"https://{host(server)}"
    assert await admitted(server, origin)
    assert decision(server, origin) == {"origin": origin, "allowed": True, "setting": SETTING}


async def test_an_https_page_behind_a_proxy_that_says_x_forwarded_proto(server) -> None:
    origin = f"https://{host(server)}"
    assert await admitted(server, origin, **{"X-Forwarded-Proto": "https"})
    assert decision(server, origin, **{"X-Forwarded-Proto": "https"})["allowed"] is True


async def test_the_servers_own_plain_origin_still_works(server) -> None:
    assert await admitted(server, server.base_url)
    assert decision(server, server.base_url)["allowed"] is True


@pytest.mark.parametrize("page", [
    "https://evil.example",
    "https://127.0.0.1",          # the right host on another port
    "https://127.0.0.1.evil.example",
    "null",                       # a sandboxed or file:// page
    "ftp://127.0.0.1",
])
async def test_another_hosts_page_is_refused(server, page: str) -> None:
    assert not await admitted(server, page)
    assert decision(server, page) == {"origin": page, "allowed": False, "setting": SETTING}


@pytest.mark.parametrize("name", ["rebound.example", "127.0.0.1.nip.example", "localhost.example"])
async def test_a_rebound_name_is_not_the_servers_host(server, name: str) -> None:
    # DNS rebinding: the attacker's name resolves to this server, so the page's
    # origin equals the Host header it sends. By default Host must name this server.
    page_host = f"{name}:{server.port}"
    origin = f"http://{page_host}"
    assert not await admitted(server, origin, host_header=page_host)
    assert decision(server, origin, Host=page_host)["allowed"] is False


@pytest.mark.parametrize("page_host",
                         ["localhost:8443", "LOCALHOST", "[::1]:8443", "10.1.2.3:8443"])
async def test_loopback_names_and_addresses_on_any_port_are_the_servers_host(
        server, page_host: str) -> None:
    # A terminator listens on a port of its own; an address involves no name to rebind.
    origin = f"https://{page_host}"
    assert await admitted(server, origin, host_header=page_host)
    assert decision(server, origin, Host=page_host)["allowed"] is True


def test_own_names_follow_the_listening_address() -> None:
    assert own_host_names("127.0.0.1") == {"localhost"}
    assert own_host_names("support.example.com") == {"localhost", "support.example.com"}
    everywhere = own_host_names("0.0.0.0")
    assert socket.gethostname().lower() in everywhere and "localhost" in everywhere


def test_start_up_says_what_is_accepted(tmp_path) -> None:
    text = accepted_origins_text(relay_settings(tmp_path))
    assert "localhost" in text and "IP address" in text and SETTING in text
    listed = relay_settings(tmp_path, public_origins=("https://console.example.com",))
    assert accepted_origins_text(listed) == "https://console.example.com"


async def test_a_client_that_sends_no_origin_is_not_a_browser_and_is_admitted(server) -> None:
    assert decision(server, None) == {"origin": None, "allowed": True, "setting": SETTING}


async def test_a_refused_origin_is_logged_once_naming_it_and_the_setting(
        server, caplog: pytest.LogCaptureFixture) -> None:
    page = foreign()
    with caplog.at_level(logging.WARNING, logger="remote_server.web.origin"):
        assert not await admitted(server, page)
        assert not await admitted(server, page)
        assert decision(server, page)["allowed"] is False
    warnings = [r.getMessage() for r in caplog.records if r.name == "remote_server.web.origin"]
    assert len(warnings) == 1, warnings
    assert f'"{page}"' in warnings[0] and SETTING in warnings[0]
    assert f'Host "{host(server)}"' in warnings[0]


@pytest.fixture(scope="module")
def listed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    settings = relay_settings(tmp_path_factory.mktemp("origins"),
                              public_origins=("https://console.example.com",))
    with live_server(settings) as live:
        yield live


async def test_public_origins_are_the_list_for_consoles_served_elsewhere(listed) -> None:
    assert await admitted(listed, "https://console.example.com")
    assert decision(listed, "https://console.example.com/")["allowed"] is True
    # When set, the list is the whole rule (CONTRACT 4), the server's own host included.
    assert not await admitted(listed, f"https://{host(listed)}")
    assert decision(listed, f"https://{host(listed)}")["allowed"] is False


@pytest.mark.parametrize(("origin", "host_header", "same"), [
    ("https://example.com", "example.com", True),
    ("https://example.com", "example.com:443", True),
    ("https://example.com:443", "example.com", True),
    ("http://example.com", "example.com", True),
    ("https://EXAMPLE.com/", "example.COM", True),
    ("https://example.com:8443", "example.com:8443", True),
    ("https://[::1]:8443", "[::1]:8443", True),
    ("https://example.com", "example.com:8443", False),
    ("https://example.com:8443", "example.com", False),
    ("https://example.com", "example.org", False),
    ("https://user@example.com", "example.com", False),
    ("https://example.com/path", "example.com", False),
    ("https://example.com:x", "example.com", False),
    ("https://example.com", "example.com:x", False),
    ("https://example.com", "", False),
    ("wss://example.com", "example.com", False),
    ("", "example.com", False),
])
def test_same_host(origin: str, host_header: str, same: bool) -> None:
    assert same_host(origin, host_header) is same

"""The nginx and Caddy configurations of ``deploy/``, run as shipped in front of a server.

Each proxy is the real Debian package with the shipped file, only its
addresses and certificate paths changed (:func:`~remote_server.testing.
tls_terminator.shipped`); the certificate comes from a throwaway authority
the agent (``ca_bundle``) and the Python viewer (``ca_bundle``) are given,
and nothing else trusts. The server trusts the proxy's X-Forwarded-For
(``REMOTE_SUPPORT_TRUSTED_PROXIES=127.0.0.1``), as the files' comments tell a
deployment to; a client's own X-Forwarded-For must not get through.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from remote_server.settings import ServerSettings
from remote_server.testing.processes import AgentProcess, Api
from remote_server.testing.tls_terminator import (
    DEPLOY,
    PROXIES,
    Deployment,
    agent_home,
    deployment,
)
from remote_viewer.client import open_viewer

from remote_core.testing.xvfb import Xvfb, blank_painter, xvfb

pytestmark = pytest.mark.slow

SPOOFED = "203.0.113.9"


@pytest.fixture(scope="module", params=PROXIES)
def deployed(request: pytest.FixtureRequest,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    with deployment(request.param, tmp_path_factory.mktemp(request.param),
                    trusted_proxies="127.0.0.1") as running:
        yield running


@pytest.fixture(scope="module")
def api(deployed: Deployment) -> Iterator[Api]:
    """The admin's REST API, for setting up (straight to the server: not under test)."""
    client = Api(deployed.server)
    yield client
    client.close()


@pytest.fixture(scope="module")
def display() -> Iterator[Xvfb]:
    with xvfb(640, 480, set_display=False) as running:
        yield running


@pytest.fixture(scope="module")
def agent(deployed: Deployment, api: Api, display: Xvfb,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, AgentProcess]]:
    """A keyed agent given https://localhost:<proxy port> and the CA in its ``ca_bundle``."""
    agent_id, key = api.machine_with_key()
    home = agent_home(tmp_path_factory.mktemp("agent"), deployed.ca)
    running = AgentProcess(home, display.display, "--server", deployed.url, "--key", key)
    try:
        yield agent_id, running
    finally:
        running.stop()


@pytest.mark.xvfb
def test_an_agent_and_a_viewer_relay_over_wss_through_the_proxy(
        deployed: Deployment, api: Api, display: Xvfb,
        agent: tuple[str, AgentProcess]) -> None:
    agent_id, process = agent
    try:
        session = api.live_session(agent_id, within=30)
    except AssertionError:
        raise AssertionError(f"the agent did not connect over wss through "
                             f"{deployed.terminator.kind}:\n{process.output()}") from None

    async def watch() -> None:
        with blank_painter(display.display) as painter:
            async with open_viewer(deployed.url, api.viewer_token(session["id"]),
                                   ca_bundle=str(deployed.ca.ca_pem)) as viewer:
                painter.fill(0, 0, 64, 64, 0xFF0000)
                painter.sync()
                await viewer.wait_for_image(
                    lambda image: int(image[5, 5, 2]) > 200 and int(image[5, 5, 1]) < 60,
                    within=30)

    anyio.run(watch)
    assert "CERTIFICATE_VERIFY_FAILED" not in process.output()


def test_a_viewer_without_the_authority_is_refused(deployed: Deployment, api: Api) -> None:
    async def attempt() -> None:
        async with open_viewer(deployed.url, "not-a-token", ca_bundle=""):
            pass

    with pytest.raises(ssl.SSLCertVerificationError):
        anyio.run(attempt)


def test_the_client_address_is_the_proxys_view_not_the_clients_claim(
        deployed: Deployment, api: Api) -> None:
    with httpx.Client(base_url=deployed.url, verify=deployed.ca.client_context(),
                      timeout=15) as client:
        r = client.post("/api/auth/login", json={"username": "nobody", "password": "wrong"},
                        headers={"X-Forwarded-For": SPOOFED})
    assert r.status_code == 401, r.text
    r = api.get("/api/events", params={"limit": 50})
    r.raise_for_status()
    failed = [e for e in r.json() if e["kind"] == "auth.login_failed"
              and e.get("target") == "nobody"]
    assert failed, r.json()
    assert failed[0]["client_ip"] == "127.0.0.1", failed[0]  # the proxy's peer, not SPOOFED
    # The proxy's header was believed (it is trusted), so no "untrusted forwarder" note.
    assert "X-Forwarded-For from" not in deployed.server.log.read_text(errors="replace")


def _seconds(value: str) -> float:
    number, unit = re.fullmatch(r"(\d+)([smh]?)", value).groups()  # type: ignore[union-attr]
    return float(number) * {"": 1, "s": 1, "m": 60, "h": 3600}[unit]


def test_the_shipped_timeouts_outlast_the_heartbeat() -> None:
    """A quiet socket is cut by the proxy only after the server would have dropped it."""
    limit = ServerSettings().heartbeat_timeout
    nginx = (DEPLOY / "nginx" / "remote-support.conf").read_text()
    found = re.findall(r"proxy_(?:read|send)_timeout (\w+);", nginx)
    assert len(found) == 2 and all(_seconds(v) > limit for v in found), found
    caddy = (DEPLOY / "caddy" / "Caddyfile").read_text()
    idle: Any = re.search(r"^\s*idle (\w+)$", caddy, re.M)
    assert idle is not None and _seconds(idle.group(1)) > limit
    assert "stream_timeout" not in caddy  # upgraded sockets: no limit of Caddy's own

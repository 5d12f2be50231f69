"""The server behind a real TLS terminator, reached only over https and wss.

Each test runs three times: behind HAProxy in ``mode tcp`` (decrypts and
forwards the bytes, adds no header) and behind nginx and Caddy as HTTP proxies
with the configurations ``deploy/`` ships (they add ``X-Forwarded-Proto`` and
``X-Forwarded-For``). The server runs with the
shipped settings (``ServerProcess`` sets only the listed deviations: its own
database, admin password, address and port); the certificates come from a
throwaway ``trustme`` authority, which every client is given and nothing
else trusts. See :mod:`remote_server.testing.tls_terminator`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import pytest
from remote_server.testing.processes import ADMIN_PASSWORD, AgentProcess, Api
from remote_server.testing.tls_terminator import (
    KINDS,
    PROXIES,
    Deployment,
    agent_home,
    deployment,
)
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus
from websockets.typing import Origin

from remote_core.protocol import pb, wrap
from remote_core.testing.browser import chromium, log_in, wait_until, watched_context
from remote_core.testing.xvfb import Xvfb, xvfb

pytestmark = pytest.mark.slow

SETTING = "REMOTE_SUPPORT_PUBLIC_ORIGINS"
WIDTH, HEIGHT = 800, 600


@pytest.fixture(scope="module", params=KINDS)
def deployed(request: pytest.FixtureRequest,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    with deployment(request.param, tmp_path_factory.mktemp(request.param)) as running:
        yield running


@pytest.fixture(scope="module")
def api(deployed: Deployment) -> Iterator[Api]:
    """The admin's REST API, for setting up (straight to the server: not under test)."""
    client = Api(deployed.server)
    yield client
    client.close()


def https(deployed: Deployment) -> httpx.Client:
    """A client of the public address that trusts the test authority, and only it."""
    return httpx.Client(base_url=deployed.url, verify=deployed.ca.client_context(), timeout=15)


def server_log(deployed: Deployment) -> list[str]:
    return deployed.server.log.read_text(errors="replace").splitlines()


def viewer_answer(deployed: Deployment, origin: str) -> pb.Message:
    """``/ws/viewer`` through the terminator, opened as a browser page of ``origin`` opens
    it, and the server's answer to a session request with a token that is none.

    websockets' asyncio client, which reads and writes a TLS session from one thread. The
    sync client reads in a thread of its own while the caller writes, which OpenSSL does
    not allow on one session: through HAProxy, 5 upgrades of 1,500 in a loop were lost,
    and closing did not wake the reader out of ``SSL_read``."""
    async def session_answer() -> pb.Message:
        async with connect(f"{deployed.terminator.ws_url}/ws/viewer", origin=Origin(origin),
                           ssl=deployed.ca.client_context(), open_timeout=30) as ws:
            await ws.send(wrap("session_request", pb.SessionRequest(session_token="not-a-token")))
            with anyio.fail_after(10):
                data = await ws.recv()
        assert isinstance(data, bytes), data
        answer = pb.Message()
        answer.ParseFromString(data)
        return answer

    return anyio.run(session_answer)


def decision(deployed: Deployment, origin: str) -> dict[str, Any]:
    with https(deployed) as client:
        r = client.post("/api/viewer-origin", headers={"Origin": origin})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


# -- the viewer socket's origin ------------------------------------------------------------
def test_the_browsers_own_origin_gets_its_socket(deployed: Deployment) -> None:
    """The page is https://<Host>; the server behind the terminator saw http."""
    answer = viewer_answer(deployed, deployed.url)
    assert answer.WhichOneof("payload") == "session_response"
    assert not answer.session_response.success  # admitted to the handshake, then judged
    assert decision(deployed, deployed.url) == {"origin": deployed.url, "allowed": True,
                                                "setting": SETTING}


def test_another_origin_is_refused_and_logged_once(deployed: Deployment) -> None:
    page = f"https://console-{deployed.terminator.kind}.example"
    for _ in range(2):
        with pytest.raises(InvalidStatus) as refused:
            viewer_answer(deployed, page)
        assert refused.value.response.status_code == 403
    assert decision(deployed, page) == {"origin": page, "allowed": False, "setting": SETTING}
    warnings = [line for line in server_log(deployed)
                if f"viewer socket refused for origin {json.dumps(page)}" in line]
    assert len(warnings) == 1, warnings
    assert "WARNING" in warnings[0] and SETTING in warnings[0]


def test_a_proxys_forwarded_for_is_named_once(deployed: Deployment) -> None:
    with https(deployed) as client:
        for _ in range(3):
            assert client.get("/healthz").status_code == 200
    warnings = [line for line in server_log(deployed) if "X-Forwarded-For from" in line]
    if deployed.terminator.kind in PROXIES:  # they add the header; nobody trusts it
        assert len(warnings) == 1, warnings
        assert "REMOTE_SUPPORT_TRUSTED_PROXIES" in warnings[0]
    else:  # a TCP terminator adds nothing
        assert warnings == []


# -- the agent ---------------------------------------------------------------------------
def test_the_version_poll_over_tls_trusts_the_agents_ca_bundle(deployed: Deployment, api: Api,
                                                               tmp_path: Any) -> None:
    from remote_agent.config import AgentConfig
    from remote_agent.update import Updater

    r = api.post("/api/releases", json={
        "version": "99.0.0", "download_url": "https://releases.example/remote-agent.pyz",
        "checksum_sha256": "ab" * 32})
    assert r.status_code == 201, r.text
    with_bundle = AgentConfig(server=deployed.url, ca_bundle=str(deployed.ca.ca_pem))
    offer = anyio.run(Updater(with_bundle, current="1.0.0").check)
    assert offer is not None and offer.version == "99.0.0"
    # Certificates are verified: without the bundle the same poll finds nothing.
    assert anyio.run(Updater(AgentConfig(server=deployed.url), current="1.0.0").check) is None


@pytest.fixture(scope="module")
def display() -> Iterator[Xvfb]:
    with xvfb(WIDTH, HEIGHT, set_display=False) as server:
        yield server


@dataclass
class Managed:
    agent_id: str
    agent: AgentProcess


@pytest.fixture(scope="module")
def managed(deployed: Deployment, api: Api, display: Xvfb,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Managed]:
    """A keyed agent given https://localhost:<port> and the CA in its ``ca_bundle``."""
    agent_id, key = api.machine_with_key(organization="Acme")
    home = agent_home(tmp_path_factory.mktemp("agent"), deployed.ca)
    agent = AgentProcess(home, display.display, "--server", deployed.url, "--key", key)
    try:
        yield Managed(agent_id, agent)
    finally:
        agent.stop()


def live_session(api: Api, managed: Managed) -> dict[str, Any]:
    try:
        return api.live_session(managed.agent_id, within=30)
    except AssertionError:
        raise AssertionError(f"the agent did not connect over wss; its log:\n"
                             f"{managed.agent.output()}") from None


def test_an_agent_connects_over_wss_with_its_ca_bundle(api: Api, managed: Managed) -> None:
    session = live_session(api, managed)
    assert session["agent_id"] == managed.agent_id and session["consent_state"] == "not_required"
    assert "CERTIFICATE_VERIFY_FAILED" not in managed.agent.output()


# -- the console and the viewer in Chromium ------------------------------------------------
@pytest.fixture(scope="module")
def browser(deployed: Deployment, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Chromium whose own HOME holds an NSS database that trusts the test authority."""
    pytest.importorskip("playwright.sync_api")
    home = deployed.ca.browser_home(tmp_path_factory.mktemp("chromium-home"))
    with chromium(env={**os.environ, "HOME": str(home)}) as instance:
        yield instance


def viewer_state(page: Any) -> tuple[str | None, str]:
    state = page.locator("#state")
    return state.get_attribute("data-state"), (state.text_content() or "").strip()


@pytest.mark.browser
@pytest.mark.xvfb
def test_the_console_and_the_viewer_over_https_and_wss(deployed: Deployment, api: Api,
                                                      managed: Managed, browser: Any) -> None:
    session = live_session(api, managed)
    with watched_context(browser, viewport={"width": 1280, "height": 800}) as context:
        page = context.new_page()
        log_in(page, deployed.url, "admin", ADMIN_PASSWORD)
        assert page.url.startswith(f"{deployed.url}/console/")
        page.goto(f"{deployed.url}/console/viewer.html?session={session['id']}")
        wait_until(lambda: viewer_state(page)[0] == "connected", timeout=30,
                   what=lambda: f"the viewer to connect; #state is {viewer_state(page)}")
        assert viewer_state(page)[1].startswith("Connected"), viewer_state(page)

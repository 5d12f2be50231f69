"""Webhooks end to end: a real server, a real agent session, real HTTPS receivers.

The receivers listen on 127.0.0.1, which the guard refuses like any loopback
address; the server allows exactly that address (``allow_addresses``), and a
target on 127.0.0.2 (loopback too) and one on a private address stay refused.
Retries wait 50 ms instead of 2 s (the plugin's ``backoff`` option), so the test
takes a moment; nothing else differs from the shipped defaults.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from remote_server.testing.deviations import test_settings
from remote_server.testing.liveserver import (
    ApiClient,
    LiveServer,
    eventually,
    fresh_ip,
    live_server,
)
from remote_webhooks import verify
from websockets.asyncio.client import connect

from remote_core.protocol import pb, wrap

from .receiver import Receiver

pytestmark = pytest.mark.anyio

ADMIN_PASSWORD = "webhooks-admin-password"
SHARED_KEY = "webhooks-shared-agent-key"
SECRET = "receiver-secret-0123456789"
FLAKY_SECRET = "flaky-secret-0123456789ab"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so one real session serves every test of the module."""
    return "asyncio"


@pytest.fixture(scope="module")
def receivers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Receiver]]:
    base = tmp_path_factory.mktemp("receivers")
    with Receiver(base / "good") as good, Receiver(base / "flaky", (500, 200)) as flaky, \
            Receiver(base / "stranger") as stranger:
        yield {"good": good, "flaky": flaky, "stranger": stranger}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory,
           receivers: dict[str, Receiver]) -> Iterator[LiveServer]:
    path = tmp_path_factory.mktemp("webhooks")
    good, flaky, stranger = receivers["good"], receivers["flaky"], receivers["stranger"]
    # One bundle with the CAs the server is told to trust; the stranger's CA is not in it.
    bundle = path / "ca-bundle.pem"
    bundle.write_bytes(good.ca.ca_pem.read_bytes() + flaky.ca.ca_pem.read_bytes())
    opened = ["session.opened"]
    options: dict[str, Any] = {
        "targets": {
            "good": {"url": good.url(), "secret": SECRET},
            "flaky": {"url": flaky.url(), "secret": FLAKY_SECRET, "events": opened},
            "stranger": {"url": stranger.url(), "secret": SECRET, "events": opened},
            "loopback": {"url": good.url("127.0.0.2"), "secret": SECRET, "events": opened},
            "private": {"url": "https://10.20.30.40/hook", "secret": SECRET, "events": opened},
        },
        "allow_addresses": ["127.0.0.1"],
        "ca_bundle": str(bundle),
        "backoff": 0.05,
        "max_attempts": 3,
    }
    settings = test_settings(database_url=f"sqlite:///{path / 'webhooks.db'}",
                             admin_password=ADMIN_PASSWORD, trusted_proxies=("127.0.0.1",),
                             shared_agent_key=SHARED_KEY)
    settings = settings.replace(plugin_tables={"webhooks": options})
    with live_server(settings) as live:
        yield live


@pytest.fixture(scope="module")
def admin(server: LiveServer) -> ApiClient:
    return ApiClient(server).login("admin", ADMIN_PASSWORD)


@pytest.fixture(scope="module")
async def session(server: LiveServer) -> str:
    """A real agent session, opened over a real WebSocket and closed again."""
    url = server.base_url.replace("http://", "ws://") + "/ws/agent"
    agent_id = str(uuid.uuid4())
    async with connect(url, additional_headers={"X-Forwarded-For": fresh_ip()},
                       open_timeout=10) as ws:
        await ws.send(wrap("session_request", pb.SessionRequest(
            agent_id=agent_id, session_token=SHARED_KEY, session_type=pb.SCREEN_CONTROL,
            client_version="1.2.3")))
        message = pb.Message()
        message.ParseFromString(await ws.recv())
        assert message.session_response.success, message
    return agent_id


def deliveries(admin: ApiClient, target: str, **params: Any) -> list[dict[str, Any]]:
    r = admin.get("/api/webhooks/deliveries", params={"limit": 500, **params})
    assert r.status_code == 200, r.text
    return [d for d in r.json() if d["target"] == target]


def opened(receiver: Receiver, agent_id: str) -> list[Any]:
    return [r for r in receiver.received
            if json.loads(r.body)["event"] == "session.opened"
            and json.loads(r.body)["agent_id"] == agent_id]


async def test_a_real_session_reaches_the_receiver_signed(
        session: str, receivers: dict[str, Receiver], admin: ApiClient) -> None:
    good = receivers["good"]
    [request] = await eventually(lambda: opened(good, session), what="session.opened")
    headers = request.headers
    assert verify(SECRET, headers["X-Remote-Support-Timestamp"], request.body,
                  headers["X-Remote-Support-Signature"], now=time.time())
    assert not verify("another-secret-0123456789", headers["X-Remote-Support-Timestamp"],
                      request.body, headers["X-Remote-Support-Signature"], now=time.time())
    body = json.loads(request.body)
    assert body["id"] == headers["X-Remote-Support-Delivery"]
    assert headers["X-Remote-Support-Event"] == "session.opened"
    assert body["session_id"] and body["occurred_at"].endswith("Z")
    # The session ended when the agent left: that event follows.
    await eventually(lambda: any(json.loads(r.body)["event"] == "session.closed"
                                 and json.loads(r.body)["agent_id"] == session
                                 for r in good.received), what="session.closed")
    log = await eventually(lambda: deliveries(admin, "good"), what="the delivery log")
    assert {d["outcome"] for d in log} == {"delivered"}
    assert log[0]["url"] == f"https://127.0.0.1:{good.port}/…"  # never the path's token
    assert "not-for-logs" not in str(admin.get("/api/webhooks/deliveries").json())


async def test_a_failing_receiver_is_retried_and_both_attempts_are_logged(
        session: str, receivers: dict[str, Receiver], admin: ApiClient) -> None:
    flaky = receivers["flaky"]
    attempts = await eventually(lambda: len(opened(flaky, session)) == 2 and
                                opened(flaky, session), what="the retry")
    assert attempts[0].headers["X-Remote-Support-Delivery"] == \
        attempts[1].headers["X-Remote-Support-Delivery"]
    log = await eventually(lambda: len(deliveries(admin, "flaky")) == 2 and
                           deliveries(admin, "flaky"), what="two logged attempts")
    assert [(d["attempt"], d["outcome"], d["status_code"]) for d in reversed(log)] == [
        (1, "retrying", 500), (2, "delivered", 200)]
    assert log[0]["delivery_id"] == log[1]["delivery_id"]
    failed = deliveries(admin, "flaky", failed="true")
    assert [d["outcome"] for d in failed] == ["retrying"]


async def test_loopback_and_private_targets_are_refused_unless_allowed(
        session: str, admin: ApiClient) -> None:
    for target, address in (("loopback", "127.0.0.2"), ("private", "10.20.30.40")):
        [refused] = await eventually(lambda t=target: deliveries(admin, t), what=target)
        assert refused["outcome"] == "refused" and refused["status_code"] is None
        assert address in refused["error"] and "allow_addresses" in refused["error"]


async def test_an_untrusted_certificate_is_never_accepted(
        session: str, receivers: dict[str, Receiver], admin: ApiClient) -> None:
    log = await eventually(lambda: len(deliveries(admin, "stranger")) == 3 and
                           deliveries(admin, "stranger"), what="three failed attempts")
    assert [d["outcome"] for d in reversed(log)] == ["retrying", "retrying", "failed"]
    assert "CERTIFICATE_VERIFY_FAILED" in log[0]["error"]
    assert receivers["stranger"].received == []


def test_the_delivery_log_is_for_administrators(server: LiveServer) -> None:
    r = ApiClient(server).get("/api/webhooks/deliveries")
    assert r.status_code == 401
    assert r.headers["content-type"].startswith("application/problem+json")


def test_a_server_without_targets_loads_the_plugin_and_stays_idle(tmp_path: Path) -> None:
    settings = test_settings(database_url=f"sqlite:///{tmp_path / 'idle.db'}",
                             admin_password=ADMIN_PASSWORD)
    with live_server(settings) as live:
        assert "webhooks" in live.app.state.plugins.names()
        admin = ApiClient(live).login("admin", ADMIN_PASSWORD)
        assert admin.get("/api/webhooks/deliveries").json() == []

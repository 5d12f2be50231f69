"""The endpoints that act on live agents, against real agent sockets (SPEC 3.3, 4, 5.3)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from remote_server.testing.liveserver import (
    ApiClient,
    LiveServer,
    ManualClock,
    assert_problem,
    eventually,
    fresh_ip,
    live_server,
)
from remote_server.web.ratelimit import MemoryRateLimiter
from remote_server.web.tokens import TokenError
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from remote_core.protocol import pb, wrap
from remote_core.testing.store_contract import make_session

from .conftest import server_settings


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, clock: ManualClock) -> Iterator[LiveServer]:
    settings = server_settings(tmp_path_factory.mktemp("live"))
    with live_server(settings, limiter=MemoryRateLimiter(clock=clock)) as live:
        yield live


class Agent:
    """A minimal agent: a real WebSocket speaking protobuf ``Message``."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.session_id = ""
        self.error = ""

    @classmethod
    async def connect(cls, server: LiveServer, token: str, ip: str | None = None) -> Agent:
        url = server.base_url.replace("http://", "ws://") + "/ws/agent"
        ws = await connect(url, additional_headers={"X-Forwarded-For": ip or fresh_ip()},
                           open_timeout=10)
        await ws.send(wrap("session_request", pb.SessionRequest(
            agent_id=str(uuid.uuid4()), session_token=token, client_version="1.0.0")))
        agent = cls(ws)
        response = await agent.expect("session_response")
        agent.session_id = response.session_id if response.success else ""
        agent.error = response.error
        return agent

    async def expect(self, kind: str, wait: float = 10) -> Any:
        while True:
            with anyio.fail_after(wait):
                data = await self.ws.recv()
            message = pb.Message()
            message.ParseFromString(data)
            if message.WhichOneof("payload") == kind:
                return getattr(message, kind)

    async def closed(self, wait: float = 10) -> bool:
        try:
            with anyio.fail_after(wait):
                while True:
                    await self.ws.recv()
        except ConnectionClosed:
            return True



def keyed(admin: ApiClient, organization: str = "acme") -> tuple[str, str, str]:
    """A pre-registered machine and a key: ``(agent_id, key_id, plain key)``."""
    agent_id = admin.post("/api/machines", json={"organization": organization}).json()["agent_id"]
    key = admin.post(f"/api/machines/{agent_id}/keys", json={}).json()
    return agent_id, key["id"], key["key"]


@pytest.mark.anyio
async def test_a_live_agent_shows_in_machines_and_sessions(admin: ApiClient,
                                                           tech: ApiClient) -> None:
    agent_id, _, key = keyed(admin)
    agent = await Agent.connect(admin.server, key)
    assert agent.session_id
    machine = admin.get(f"/api/machines/{agent_id}").json()
    assert machine["status"] == "online" and machine["session_id"] == agent.session_id
    sessions = {s["id"]: s for s in tech.get("/api/sessions").json()}
    live = sessions[agent.session_id]
    assert live["live"] and live["consent_state"] == "not_required"
    assert live["agent_id"] == agent_id and live["is_managed"]
    assert admin.get(f"/api/sessions/{agent.session_id}").json()["live"] is True
    online = {m["agent_id"] for m in admin.get("/api/machines", params={"status": "online"}).json()}
    assert agent_id in online
    await agent.ws.close()


@pytest.mark.anyio
async def test_live_sessions_are_listed_however_many_newer_ones_ended(
        admin: ApiClient, tech: ApiClient) -> None:
    """The first page of sessions is the newest; ``live=true`` lists the live ones alone."""
    agent_id, _, key = keyed(admin)
    agent = await Agent.connect(admin.server, key)
    store = admin.server.ctx.store
    for _ in range(4):
        await store.create_session(make_session(f"ended-{uuid.uuid4()}"))
    newest = [s["id"] for s in admin.get("/api/sessions", params={"limit": 2}).json()]
    assert agent.session_id not in newest
    live = admin.get("/api/sessions", params={"live": "true", "limit": 1000}).json()
    assert agent.session_id in [s["id"] for s in live] and all(s["live"] for s in live)
    assert next(s for s in live if s["id"] == agent.session_id)["agent_id"] == agent_id
    ended = admin.get("/api/sessions", params={"live": "false", "limit": 1000}).json()
    assert ended and not any(s["live"] for s in ended)
    assert agent.session_id in [s["id"] for s in tech.get(
        "/api/sessions", params={"live": "true"}).json()]
    await agent.ws.close()


@pytest.mark.anyio
async def test_viewer_token_is_bound_to_the_session(admin: ApiClient, tech: ApiClient) -> None:
    _, _, key = keyed(admin)
    agent = await Agent.connect(admin.server, key)
    r = tech.post(f"/api/sessions/{agent.session_id}/viewer-token")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["expires_in"] == 300 and body["session_id"] == agent.session_id
    tokens = admin.server.ctx.tokens
    assert tokens.verify_viewer(body["token"], agent.session_id).session_id == agent.session_id
    with pytest.raises(TokenError):
        tokens.verify_viewer(body["token"], str(uuid.uuid4()))
    assert_problem(tech.get("/api/auth/me", headers={
        "Authorization": f"Bearer {body['token']}"}), 401)
    assert_problem(tech.post(f"/api/sessions/{uuid.uuid4()}/viewer-token"), 404)
    await agent.ws.close()


@pytest.mark.anyio
async def test_viewer_token_is_409_while_consent_is_pending(admin: ApiClient,
                                                            tech: ApiClient) -> None:
    code = tech.post("/api/codes").json()["code"]
    agent = await Agent.connect(admin.server, code)
    request = await agent.expect("consent_request")
    assert request.session_id == agent.session_id
    assert admin.get(f"/api/sessions/{agent.session_id}").json()["consent_state"] == "pending"
    pending = assert_problem(tech.post(f"/api/sessions/{agent.session_id}/viewer-token"), 409,
                             "consent")
    assert pending["type"] == "/api/problems/awaiting-consent"
    await agent.ws.send(wrap("consent_response", pb.ConsentResponse(
        session_id=agent.session_id, granted=True)))
    await eventually(lambda: admin.server.ctx.registry.session(agent.session_id).consent_state
                     == "granted")
    assert tech.post(f"/api/sessions/{agent.session_id}/viewer-token").status_code == 200
    await agent.ws.close()


@pytest.mark.anyio
async def test_delete_session_without_purge_disconnects_only(admin: ApiClient) -> None:
    _, _, key = keyed(admin)
    agent = await Agent.connect(admin.server, key)
    r = admin.delete(f"/api/sessions/{agent.session_id}")
    assert r.status_code == 200 and r.json() == {
        "session_id": agent.session_id, "action": "disconnected", "was_live": True}
    assert await agent.closed()
    row = admin.get(f"/api/sessions/{agent.session_id}")
    assert row.status_code == 200 and row.json()["live"] is False, "the row stays"


@pytest.mark.anyio
async def test_delete_session_with_purge_soft_deletes(admin: ApiClient) -> None:
    _, _, key = keyed(admin)
    agent = await Agent.connect(admin.server, key)
    r = admin.delete(f"/api/sessions/{agent.session_id}", params={"purge": "true"})
    assert r.status_code == 200 and r.json()["action"] == "purged"
    assert await agent.closed()
    assert_problem(admin.get(f"/api/sessions/{agent.session_id}"), 404)
    assert agent.session_id not in {s["id"] for s in admin.get("/api/sessions").json()}
    assert admin.server.ctx.registry.session(agent.session_id) is None
    assert_problem(admin.delete(f"/api/sessions/{uuid.uuid4()}"), 404)


@pytest.mark.anyio
async def test_uninstall_sends_admin_uninstall_then_removes(admin: ApiClient) -> None:
    agent_id, _, key = keyed(admin)
    agent = await Agent.connect(admin.server, key)
    r = admin.delete(f"/api/machines/{agent_id}", params={"uninstall": "true", "purge": "true"})
    assert r.status_code == 200 and r.json()["uninstall_sent"] is True
    command = await agent.expect("admin_command")
    assert command.command == pb.ADMIN_UNINSTALL
    assert await agent.closed()
    assert not admin.server.ctx.registry.is_online(agent_id)
    offline = keyed(admin)[0]
    r = admin.delete(f"/api/machines/{offline}", params={"uninstall": "true"})
    assert r.status_code == 200 and r.json()["uninstall_sent"] is False


@pytest.mark.anyio
async def test_push_update_sends_update_info_and_admin_update(admin: ApiClient) -> None:
    agent_id, _, key = keyed(admin)
    admin.post("/api/releases", json={"version": "7.1.0", "checksum_sha256": "cd" * 32,
                                      "download_url": "https://dl.example.com/a-7.1.0"})
    agent = await Agent.connect(admin.server, key)
    r = admin.post(f"/api/machines/{agent_id}/update", json={})
    assert r.status_code == 202, r.text
    assert r.json() == {"agent_id": agent_id, "version": "7.1.0"}
    info = await agent.expect("update_info")
    assert (info.version, info.checksum_sha256) == ("7.1.0", "cd" * 32)
    command = await agent.expect("admin_command")
    assert command.command == pb.ADMIN_UPDATE
    kinds = [e["kind"] for e in admin.get("/api/events", params={"agent_id": agent_id}).json()]
    assert "machine.update_pushed" in kinds
    await agent.ws.close()


@pytest.mark.anyio
async def test_revoking_a_key_closes_the_socket_that_used_it(admin: ApiClient) -> None:
    agent_id, key_id, key = keyed(admin)
    agent = await Agent.connect(admin.server, key)
    assert admin.delete(f"/api/machines/{agent_id}/keys/{key_id}").status_code == 204
    assert await agent.closed()
    again = await Agent.connect(admin.server, key)
    assert not again.session_id


@pytest.mark.anyio
async def test_the_code_lockout_also_guards_the_agent_socket(admin: ApiClient, tech: ApiClient,
                                                             anon: ApiClient) -> None:
    code = tech.post("/api/codes").json()["code"]
    for _ in range(10):
        assert anon.post("/api/codes/validate", json={"code": "ZZZ-ZZZ-ZZZ"}).status_code == 404
    agent = await Agent.connect(admin.server, code, ip=anon.ip)
    assert not agent.session_id, "a locked-out address cannot try codes on the socket"
    listed = {c["code"]: c for c in tech.get("/api/codes").json()}
    assert listed[code]["status"] == "pending"


@pytest.mark.anyio
async def test_a_technician_sees_only_sessions_of_granted_organizations(
        admin: ApiClient, make_user: Any) -> None:
    _, _, mine = keyed(admin, organization="granted-org")
    _, _, theirs = keyed(admin, organization="hidden-org")
    agent_mine = await Agent.connect(admin.server, mine)
    agent_theirs = await Agent.connect(admin.server, theirs)
    narrow = make_user("session-narrow", permissions=["view"], client_access=["granted-org"])
    listed = {s["id"] for s in narrow.get("/api/sessions").json()}
    assert agent_mine.session_id in listed and agent_theirs.session_id not in listed
    assert narrow.get(f"/api/sessions/{agent_mine.session_id}").status_code == 200
    assert_problem(narrow.get(f"/api/sessions/{agent_theirs.session_id}"), 404)
    assert_problem(narrow.post(f"/api/sessions/{agent_theirs.session_id}/viewer-token"), 404)
    assert narrow.post(f"/api/sessions/{agent_mine.session_id}/viewer-token").status_code == 200
    await agent_mine.ws.close()
    await agent_theirs.ws.close()


@pytest.mark.anyio
async def test_a_login_token_is_refused_on_the_viewer_socket(admin: ApiClient) -> None:
    _, _, key = keyed(admin)
    agent = await Agent.connect(admin.server, key)
    login_token = admin.headers["Authorization"].split(" ", 1)[1]
    url = admin.server.base_url.replace("http://", "ws://") + "/ws/viewer"
    async with connect(url, additional_headers={"X-Forwarded-For": fresh_ip()}) as ws:
        await ws.send(wrap("session_request", pb.SessionRequest(session_token=login_token)))
        viewer = Agent(ws)
        response = await viewer.expect("session_response")
        assert not response.success and response.error
        assert await viewer.closed()
    await agent.ws.close()

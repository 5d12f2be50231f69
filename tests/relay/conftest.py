"""End-to-end harness: a real server on an ephemeral port, its REST API, and protobuf peers.

The server runs under uvicorn in its own thread and event loop (as in
production); the test's peers are ``websockets`` clients in the test's loop,
so every message crosses a real socket. ``127.0.0.1`` is a trusted proxy, so
each peer speaks from its own client address (``X-Forwarded-For``) and the
support-code rate limit of one test never reaches another.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from remote_server.settings import ServerSettings
from remote_server.testing.deviations import shortened_timeouts, test_settings
from remote_server.testing.liveserver import LiveServer, fresh_ip, live_server
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from remote_core.protocol import pb, wrap

ADMIN_PASSWORD = "relay-admin-password"
BUDGET = 1024 * 1024
MAX_MESSAGE = 2 * 1024 * 1024
SHARED_KEY = "relay-shared-key-for-tests"
def relay_settings(path: Path, **changes: Any) -> ServerSettings:
    """The shipped settings with the relay suite's deviations (each listed with its reason
    in remote_server.testing.deviations)."""
    values: dict[str, Any] = {
        "database_url": f"sqlite:///{path / 'relay.db'}", "admin_password": ADMIN_PASSWORD,
        "trusted_proxies": ("127.0.0.1",),
        "viewer_buffer_bytes": BUDGET, "max_message_bytes": MAX_MESSAGE,
        "shared_agent_key": SHARED_KEY,
    }
    return test_settings(**{**values, **changes})


def recording_settings(path: Path, **changes: Any) -> ServerSettings:
    """:func:`relay_settings` recording every session into ``path / "store"``."""
    return relay_settings(path, **{"recordings": "on",
                                   "recordings_url": f"file://{path / 'store'}", **changes})


IMPATIENT = shortened_timeouts(1 / 30)
"""Heartbeat 0.5 s, silence 1.5 s, first message 0.33 s, consent 2 s: the shipped ratios."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(relay_settings(tmp_path_factory.mktemp("relay"))) as live:
        yield live


@pytest.fixture(scope="module")
def impatient(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A server whose timeouts are all shortened together (IMPATIENT)."""
    with live_server(relay_settings(tmp_path_factory.mktemp("impatient"), **IMPATIENT)) as live:
        yield live


class Admin:
    """The REST API, logged in as the first admin."""

    def __init__(self, server: LiveServer, username: str = "admin",
                 password: str = ADMIN_PASSWORD) -> None:
        self.server = server
        self.username = username
        self.http = httpx.Client(base_url=server.base_url, timeout=30,
                                 headers={"X-Forwarded-For": fresh_ip()})
        r = self.http.post("/api/auth/login", json={"username": username, "password": password})
        assert r.status_code == 200, r.text
        self.token = r.json()["access_token"]
        self.http.headers["Authorization"] = f"Bearer {self.token}"

    def ok(self, method: str, path: str, status: int = 200, **kwargs: Any) -> Any:
        r = self.http.request(method, path, **kwargs)
        assert r.status_code == status, f"{method} {path}: {r.status_code} {r.text}"
        return r.json() if r.content else None

    def machine(self, organization: str = "acme") -> str:
        return str(self.ok("POST", "/api/machines", 201,
                           json={"organization": organization})["agent_id"])

    def key(self, agent_id: str) -> tuple[str, str]:
        body = self.ok("POST", f"/api/machines/{agent_id}/keys", 201, json={})
        return body["id"], body["key"]

    def keyed_machine(self) -> tuple[str, str]:
        """A pre-registered machine and a key for it: ``(agent_id, plain key)``."""
        agent_id = self.machine()
        return agent_id, self.key(agent_id)[1]

    def technician(self, *permissions: str) -> Admin:
        """A new technician with ``permissions``, access to every organization, logged in."""
        name, password = f"tech-{uuid.uuid4().hex[:8]}", "technician-password"
        user = self.ok("POST", "/api/users", 201, json={
            "username": name, "password": password, "role": "technician",
            "permissions": list(permissions)})
        self.ok("PUT", f"/api/users/{user['id']}/client-access", json={"organizations": ["*"]})
        return Admin(self.server, name, password)

    def code(self) -> str:
        return str(self.ok("POST", "/api/codes", 201, json={})["code"])

    def viewer_token(self, session_id: str) -> str:
        return str(self.ok("POST", f"/api/sessions/{session_id}/viewer-token")["token"])

    def events(self, session_id: str) -> list[str]:
        body = self.ok("GET", "/api/events", params={"session_id": session_id, "limit": 100})
        items = body["items"] if isinstance(body, dict) else body
        return [e["kind"] for e in items]


@pytest.fixture(scope="module")
def admin(server: LiveServer) -> Admin:
    return Admin(server)


class Peer:
    """A test agent or viewer: protobuf ``Message`` over a real WebSocket."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws

    @classmethod
    async def open(cls, server: LiveServer, path: str, *, headers: dict[str, str] | None = None,
                   **kwargs: Any) -> Peer:
        url = server.base_url.replace("http://", "ws://") + path
        all_headers = {"X-Forwarded-For": fresh_ip(), **(headers or {})}
        ws = await connect(url, additional_headers=all_headers, max_size=None,
                           open_timeout=10, **kwargs)
        return cls(ws)

    @classmethod
    async def agent(cls, server: LiveServer, token: str, agent_id: str = "",
                    session_type: int = pb.SCREEN_CONTROL, **kwargs: Any) -> Peer:
        peer = await cls.open(server, "/ws/agent", **kwargs)
        await peer.send("session_request", pb.SessionRequest(
            agent_id=agent_id or str(uuid.uuid4()), session_token=token,
            session_type=session_type, client_version="1.2.3"))
        return peer

    @classmethod
    async def viewer(cls, server: LiveServer, token: str, session_type: int = pb.SCREEN_CONTROL,
                     path: str = "/ws/viewer", codecs: tuple[str, ...] = (),
                     **kwargs: Any) -> Peer:
        peer = await cls.open(server, path, **kwargs)
        await peer.send("session_request", pb.SessionRequest(
            session_token=token, session_type=session_type, codecs=codecs))
        return peer

    async def send(self, kind: str, payload: Any) -> None:
        await self.ws.send(wrap(kind, payload))

    async def recv(self, wait: float = 10) -> Any:
        with anyio.fail_after(wait):
            data = await self.ws.recv()
        message = pb.Message()
        message.ParseFromString(data)
        return message

    async def expect(self, kind: str, wait: float = 10,
                     skip: frozenset[str] = frozenset({"heartbeat_ack"})) -> Any:
        """The next message of ``kind``, skipping the kinds in ``skip``; anything else fails."""
        while True:
            message = await self.recv(wait)
            got = message.WhichOneof("payload")
            if got == kind:
                return getattr(message, kind)
            assert got in skip, f"expected {kind}, got {got}: {message}"

    async def response(self) -> Any:
        return await self.expect("session_response")

    async def accepted(self) -> str:
        response = await self.response()
        assert response.success, response.error
        return str(response.session_id)

    async def closed(self, wait: float = 10) -> tuple[int | None, list[str]]:
        """Read until the server closes; return the close code and the kinds read meanwhile."""
        kinds: list[str] = []
        try:
            while True:
                kinds.append((await self.recv(wait)).WhichOneof("payload"))
        except ConnectionClosed as exc:
            return (exc.rcvd.code if exc.rcvd is not None else None), kinds

    async def close(self) -> None:
        await self.ws.close()


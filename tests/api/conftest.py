"""A live server per test module on a temporary SQLite file, with a hand-moved limiter clock.

``127.0.0.1`` is a trusted proxy here, so each client speaks from its own
address through ``X-Forwarded-For`` and the rate limits of one test never
leak into another.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from remote_server.settings import ServerSettings
from remote_server.testing.deviations import test_settings
from remote_server.testing.liveserver import ApiClient, LiveServer, ManualClock, live_server
from remote_server.web.ratelimit import MemoryRateLimiter

ADMIN_PASSWORD = "admin-password-for-tests"
TECH_PASSWORD = "technician-password"


def server_settings(path: Path, **changes: Any) -> ServerSettings:
    values: dict[str, Any] = {"database_url": f"sqlite:///{path / 'api.db'}",
                              "admin_password": ADMIN_PASSWORD,
                              "trusted_proxies": ("127.0.0.1",)}
    return test_settings(**{**values, **changes})


@pytest.fixture(scope="module")
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, clock: ManualClock) -> Iterator[LiveServer]:
    settings = server_settings(tmp_path_factory.mktemp("api"))
    with live_server(settings, limiter=MemoryRateLimiter(clock=clock)) as live:
        yield live


@pytest.fixture(scope="module")
def admin(server: LiveServer) -> ApiClient:
    return ApiClient(server).login("admin", ADMIN_PASSWORD)


@pytest.fixture
def anon(server: LiveServer) -> ApiClient:
    return ApiClient(server)


MakeUser = Callable[..., ApiClient]


@pytest.fixture(scope="module")
def make_user(admin: ApiClient) -> MakeUser:
    """Create a user through the API and return a client logged in as that user."""

    def make(username: str, role: str = "technician", permissions: list[str] | None = None,
             client_access: list[str] | None = None) -> ApiClient:
        r = admin.post("/api/users", json={
            "username": username, "password": TECH_PASSWORD, "role": role,
            "permissions": permissions or [], "client_access": client_access or []})
        assert r.status_code == 201, r.text
        return ApiClient(admin.server).login(username, TECH_PASSWORD)

    return make


@pytest.fixture(scope="module")
def tech(make_user: MakeUser) -> ApiClient:
    """A technician who may view and create codes, for every organization."""
    return make_user("tech", permissions=["view", "support_codes"], client_access=["*"])

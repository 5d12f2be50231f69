"""Passkeys in a cluster: a challenge handed out by one node is answered through another
(challenges live in the shared database, not in a node's memory), works once on every
node, and an account guard raised through the nodes (Redis) is lifted by an
administrator through any one of them.

The nodes stand behind one public origin (``REMOTE_SUPPORT_PUBLIC_ORIGINS``, as a
deployment behind a load balancer sets it), which is the relying party.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from remote_server.testing.liveserver import fresh_ip
from remote_server.testing.processes import ADMIN_PASSWORD, ServerProcess, start_all
from remote_server.testing.softkey import SoftAuthenticator
from remote_server.web.ratelimit import RateLimiter
from remote_store_sql.testing import postgres_database

from remote_core.testing.services import require_service, unique_name

from .conftest import cluster_settings

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

PUBLIC = "https://support.example"
PASSWORD = "technician-password-0123"


@pytest.fixture
def nodes(tmp_path: Path) -> Iterator[dict[str, ServerProcess]]:
    require_service("NATS", "127.0.0.1", 4222)
    require_service("Redis", "127.0.0.1", 6379)
    name = unique_name("passkeys")
    with postgres_database("passkeys") as database:
        running: dict[str, ServerProcess] = {}
        try:
            for node in ("a", "b"):
                running[node] = ServerProcess(
                    tmp_path / node, **cluster_settings(name, database.url, node),
                    public_origins=PUBLIC)
            start_all(*running.values())
            yield running
        finally:
            for process in running.values():
                process.stop()


def client(node: ServerProcess, token: str | None = None) -> httpx.Client:
    headers = {"X-Forwarded-For": fresh_ip()}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.Client(base_url=node.url, headers=headers, timeout=30)


def login(node: ServerProcess, name: str, password: str = PASSWORD,
          **extra: Any) -> httpx.Response:
    return client(node).post("/api/auth/login", json={"username": name, "password": password,
                                                      **extra})


def test_a_challenge_from_one_node_is_answered_through_another_once(
        nodes: dict[str, ServerProcess]) -> None:
    a, b = nodes["a"], nodes["b"]
    admin = client(a, login(a, "admin", ADMIN_PASSWORD).json()["access_token"])
    r = admin.post("/api/users", json={"username": "tech", "password": PASSWORD,
                                       "role": "technician", "permissions": ["view"],
                                       "client_access": ["*"]})
    assert r.status_code == 201, r.text
    user_id = r.json()["id"]
    key = SoftAuthenticator(PUBLIC)
    me = client(a, login(a, "tech").json()["access_token"])
    options = me.post("/api/auth/passkeys/options").json()["options"]
    assert options["rp"]["id"] == "support.example"
    r = client(b, me.headers["Authorization"].split()[1]).post(  # registered through b
        "/api/auth/passkeys", json={"name": "key", "credential": key.create(options)})
    assert r.status_code == 201, r.text

    needed = login(a, "tech")  # the challenge comes from a ...
    assert needed.status_code == 401, needed.text
    assertion = key.get(needed.json()["passkey_options"])
    assert login(b, "tech", passkey=assertion).status_code == 200  # ... and b checks it
    assert login(a, "tech", passkey=assertion).status_code == 401  # used, on every node

    thief = SoftAuthenticator(PUBLIC)
    thief.credential_id = key.credential_id
    for i in range(RateLimiter.ACCOUNT_FAILURES_BEFORE_GUARD - 1):  # the replay was one
        node = (a, b)[i % 2]
        options = login(node, "tech").json()["passkey_options"]
        assert login(node, "tech", passkey=thief.get(options)).status_code == 401
    assert login(a, "tech").status_code == 429 and login(b, "tech").status_code == 429
    r = admin.post(f"/api/users/{user_id}/unlock")  # through a
    assert r.json() == {"was_guarded": True}
    options = login(b, "tech").json()["passkey_options"]  # lifted on b too
    assert login(b, "tech", passkey=key.get(options)).status_code == 200

"""Every list pages one way (CONTRACT 2): limit, an opaque cursor, and a relative
``Link: <...>; rel="next"`` while more exist; the body stays a JSON array.

Each list is walked here through more items than a page holds, with new items inserted
between pages: every item that existed when the walk began is seen exactly once, and
none twice. On SQLite and on PostgreSQL.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import anyio
import httpx
import pytest
from remote_server.testing.liveserver import ApiClient, LiveServer, assert_problem, live_server
from remote_store_sql.store import SqlStore
from remote_store_sql.testing import postgres_database

from remote_core.records import utcnow
from remote_core.testing.store_contract import make_session

from .conftest import ADMIN_PASSWORD, TECH_PASSWORD, server_settings

PAGE = 3
SUM = "ab" * 32


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def paged_server(request: pytest.FixtureRequest,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    path = tmp_path_factory.mktemp("paging")
    if request.param == "sqlite":
        with live_server(server_settings(path)) as live:
            yield live
        return
    with postgres_database("api_paging") as database, live_server(
            server_settings(path, database_url=database.url)) as live:
        yield live


@pytest.fixture(scope="module")
def admin(paged_server: LiveServer) -> ApiClient:
    return ApiClient(paged_server).login("admin", ADMIN_PASSWORD)


def add_sessions(server: LiveServer, agent_id: str, count: int, minutes: int = 0) -> list[str]:
    """Session rows, as the relay writes them, through a store of the test's own."""
    async def write() -> list[str]:
        store = SqlStore(server.ctx.settings.database_url)
        await store.open()
        try:
            moment = utcnow() + timedelta(minutes=minutes)
            return [(await store.create_session(make_session(
                agent_id, created_at=moment + timedelta(microseconds=i)))).id
                for i in range(count)]
        finally:
            await store.close()
    return anyio.run(write)


def walk(client: ApiClient, path: str, params: dict[str, Any], ident: Callable[[Any], str],
         insert: Callable[[], object], inserts: int = 2) -> list[str]:
    """Follow ``Link: rel="next"`` from the first page to the last, inserting an item after
    each of the first ``inserts`` pages; the ids seen, in order."""
    seen: list[str] = []
    r = client.get(path, params={**params, "limit": PAGE})
    pages = 0
    while True:
        assert r.status_code == 200, r.text
        body = r.json()
        assert isinstance(body, list) and len(body) <= PAGE
        seen += [ident(item) for item in body]
        pages += 1
        following = r.links.get("next")
        if following is None:
            break
        url = following["url"]
        assert url.startswith("/") and "cursor=" in url and f"limit={PAGE}" in url, url
        if inserts:
            insert()
            inserts -= 1
        r = client.get(url)
    assert pages > 2, "the walk should span several pages"
    assert len(seen) == len(set(seen)), f"an item was listed twice: {seen}"
    return seen


def exactly_once(seen: list[str], existing: list[str]) -> None:
    for item in existing:
        assert seen.count(item) == 1, (item, seen)


def test_machines(admin: ApiClient) -> None:
    org = f"paged-{uuid.uuid4().hex[:8]}"

    def make() -> str:
        r = admin.post("/api/machines", json={"organization": org})
        assert r.status_code == 201, r.text
        return str(r.json()["agent_id"])

    existing = [make() for _ in range(8)]
    added: list[str] = []
    seen = walk(admin, "/api/machines", {"organization": org}, lambda m: m["agent_id"],
                lambda: added.append(make()))
    exactly_once(seen, existing)
    # Oldest first: machines added during the walk come after the cursor, and are seen.
    assert seen == existing + added


def test_sessions(admin: ApiClient, paged_server: LiveServer) -> None:
    agent_id = f"paged-{uuid.uuid4().hex[:8]}"
    existing = add_sessions(paged_server, agent_id, 8, minutes=1)
    seen = walk(admin, "/api/sessions", {}, lambda s: s["id"],
                lambda: add_sessions(paged_server, agent_id, 1, minutes=2))
    exactly_once(seen, existing)
    # Newest first: the rows added during the walk are newer than the cursor.
    assert [s for s in seen if s in existing] == existing[::-1]


def test_codes(admin: ApiClient) -> None:
    def make() -> str:
        r = admin.post("/api/codes", json={})
        assert r.status_code == 201, r.text
        return str(r.json()["code"])

    existing = [make() for _ in range(8)]
    seen = walk(admin, "/api/codes", {}, lambda c: c["code"], make)
    exactly_once(seen, existing)


def test_users(admin: ApiClient) -> None:
    def make() -> str:
        r = admin.post("/api/users", json={"username": f"pu-{uuid.uuid4().hex[:10]}",
                                           "password": TECH_PASSWORD})
        assert r.status_code == 201, r.text
        return str(r.json()["id"])

    existing = [make() for _ in range(8)]
    added: list[str] = []
    seen = walk(admin, "/api/users", {}, lambda u: u["id"], lambda: added.append(make()))
    exactly_once(seen, existing)
    assert seen[-len(existing) - len(added):] == existing + added


def test_releases(admin: ApiClient) -> None:
    base = uuid.uuid4().int % 10_000

    def make(n: int) -> str:
        version = f"{base}.{n}.0"
        r = admin.post("/api/releases", json={
            "version": version, "download_url": f"https://dl.example.com/{version}",
            "checksum_sha256": SUM})
        assert r.status_code == 201, r.text
        return version

    existing = [make(n) for n in range(8)]
    more = iter(range(100, 200))
    seen = walk(admin, "/api/releases", {}, lambda r: r["version"], lambda: make(next(more)))
    exactly_once(seen, existing)


def test_keys(admin: ApiClient) -> None:
    agent_id = admin.post("/api/machines", json={}).json()["agent_id"]
    path = f"/api/machines/{agent_id}/keys"

    def make() -> str:
        r = admin.post(path, json={})
        assert r.status_code == 201, r.text
        return str(r.json()["id"])

    existing = [make() for _ in range(8)]
    added: list[str] = []
    seen = walk(admin, path, {}, lambda k: k["id"], lambda: added.append(make()))
    assert seen == existing + added


def test_events(admin: ApiClient) -> None:
    agent_id = admin.post("/api/machines", json={}).json()["agent_id"]
    for _ in range(8):
        admin.post(f"/api/machines/{agent_id}/keys", json={})
    existing = [str(e["id"]) for e in admin.get(
        "/api/events", params={"agent_id": agent_id, "limit": 1000}).json()]
    assert len(existing) == 9  # the pre-registration and eight keys
    seen = walk(admin, "/api/events", {"agent_id": agent_id}, lambda e: str(e["id"]),
                lambda: admin.post(f"/api/machines/{agent_id}/keys", json={}))
    exactly_once(seen, existing)
    assert [s for s in seen if s in existing] == existing


def test_machine_history(admin: ApiClient, paged_server: LiveServer) -> None:
    agent_id = admin.post("/api/machines", json={}).json()["agent_id"]
    for _ in range(4):
        admin.post(f"/api/machines/{agent_id}/keys", json={})
    add_sessions(paged_server, agent_id, 4)
    path = f"/api/machines/{agent_id}/history"

    def ident(entry: dict[str, Any]) -> str:
        item = entry[entry["type"]]
        return f"{entry['type']}:{item['id']}"

    existing = [ident(e) for e in admin.get(path, params={"limit": 1000}).json()]
    assert len(existing) == 9 and sum(e.startswith("session:") for e in existing) == 4
    seen = walk(admin, path, {}, ident,
                lambda: admin.post(f"/api/machines/{agent_id}/keys", json={}))
    exactly_once(seen, existing)
    assert [s for s in seen if s in existing] == existing


def test_a_page_is_an_array_with_a_relative_next_link(admin: ApiClient) -> None:
    for _ in range(2):
        admin.post("/api/machines", json={"organization": "link-check"})
    r = admin.get("/api/machines", params={"organization": "link-check", "limit": 1})
    assert isinstance(r.json(), list) and len(r.json()) == 1
    link = r.headers["link"]
    assert link.startswith("</api/machines?") and link.endswith('>; rel="next"'), link
    assert "organization=link-check" in link
    last = admin.get(r.links["next"]["url"])
    assert len(last.json()) == 1 and "link" not in last.headers
    assert "link" not in admin.get("/api/machines",
                                   params={"organization": "link-check"}).headers


def test_limits_and_cursors_are_checked(admin: ApiClient) -> None:
    assert_problem(admin.get("/api/users", params={"limit": 0}), 422, "limit")
    assert_problem(admin.get("/api/users", params={"limit": 1001}), 422, "limit")
    assert len(admin.get("/api/users", params={"limit": 1000}).json()) >= 1
    for cursor in ("nonsense", "e30", "W10", "x" * 600):
        body = assert_problem(admin.get("/api/users", params={"cursor": cursor}), 422,
                              "cursor")
        assert body["type"] == "/api/problems/validation-failed"
    admin.post("/api/machines", json={"organization": "other-list"})
    admin.post("/api/machines", json={"organization": "other-list"})
    r = admin.get("/api/machines", params={"organization": "other-list", "limit": 1})
    machines_cursor = httpx.URL(r.links["next"]["url"]).params["cursor"]
    assert_problem(admin.get("/api/users", params={"cursor": machines_cursor}), 422,
                   "not a cursor of the users list")


def test_unknown_or_repeated_query_parameters_are_refused(admin: ApiClient) -> None:
    body = assert_problem(admin.get("/api/machines", params={"organisation": "acme"}), 422,
                          "organisation", "unknown")
    assert body["errors"] == [{"field": "organisation", "message": "unknown query parameter"}]
    assert_problem(admin.get("/api/machines?tag=a&tag=b"), 422, "tag", "more than once")
    # Endpoints without parameters refuse them too (a mistyped filter must not widen).
    assert_problem(admin.get("/api/auth/me", params={"verbose": "1"}), 422, "verbose")
    assert_problem(admin.post("/api/machines/bulk-remove?dry_run=1",
                              json={"agent_ids": ["x"]}), 422, "dry_run")

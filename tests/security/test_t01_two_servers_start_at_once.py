"""T01: two ``remote-support serve`` processes start at the same moment on an empty database.

The first-admin race alone is tests/api/test_first_admin.py and the migration
race plugins/store_sql/tests/test_migrations.py; here the whole start-up runs
twice at once (migrations, first admin, the generated token secret): both
processes serve, exactly one admin exists, and a token from one is good on the
other, so the secret was settled once too.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from remote_server.testing.processes import ADMIN_PASSWORD, ServerProcess
from remote_store_sql.testing import postgres_database

pytestmark = pytest.mark.slow


@contextmanager
def empty_database(kind: str, path: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{path / 'shared.db'}"
    else:
        with postgres_database("security_first_start") as database:
            yield database.url


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgresql",
                                                         marks=pytest.mark.postgres)])
def test_t01_one_admin_and_one_secret_whoever_starts_first(tmp_path: Path, kind: str) -> None:
    with empty_database(kind, tmp_path) as url:
        servers = [ServerProcess(tmp_path / name, database_url=url) for name in ("a", "b")]
        errors: list[BaseException] = []

        def start(server: ServerProcess) -> None:
            try:
                server.start()
            except BaseException as exc:  # reported below, with the server's log
                errors.append(exc)

        threads = [threading.Thread(target=start, args=(s,)) for s in servers]
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(60)
            assert not errors, [f"{e}\n{s.log.read_text()[-2000:]}" for e, s in
                                zip(errors, servers, strict=False)]
            tokens = []
            for server in servers:
                r = httpx.post(f"{server.url}/api/auth/login", timeout=30,
                               json={"username": "admin", "password": ADMIN_PASSWORD})
                assert r.status_code == 200, r.text
                tokens.append(r.json()["access_token"])
            a, b = servers
            users = httpx.get(f"{a.url}/api/users", timeout=30,
                              headers={"Authorization": f"Bearer {tokens[1]}"})
            assert users.status_code == 200, "b's token is good on a: one secret"
            assert [u["username"] for u in users.json()] == ["admin"]
            me = httpx.get(f"{b.url}/api/auth/me", timeout=30,
                           headers={"Authorization": f"Bearer {tokens[0]}"})
            assert me.status_code == 200
            for server in servers:
                assert "Traceback" not in server.log.read_text()
        finally:
            for server in servers:
                server.stop()

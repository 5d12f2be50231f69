"""The first admin: created once, race-free across processes, password shown once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from remote_server.testing.deviations import test_settings
from remote_server.web.context import open_store
from remote_server.web.users import authenticate, ensure_first_admin

from remote_core.plugins import get_plugin_manager
from remote_core.testing.services import POSTGRES_ADMIN_URL, require_service, unique_name

RACE = """
import sys, anyio
from remote_core.plugins import get_plugin_manager
from remote_server.web.context import open_store
from remote_server.web.users import ensure_first_admin
from remote_server.settings import ServerSettings

async def main(url):
    settings = ServerSettings().replace(database_url=url)
    store = open_store(settings, get_plugin_manager(settings))
    await store.open()
    try:
        print("generated" if await ensure_first_admin(store, None) else "exists", flush=True)
    finally:
        await store.close()

anyio.run(main, sys.argv[1])
"""


def race(url: str, processes: int = 4) -> list[str]:
    """Start several processes at once, each ensuring the first admin on one database."""
    procs = [subprocess.Popen([sys.executable, "-c", RACE, url], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(processes)]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        outputs.append(out.strip())
    return outputs


async def users_of(url: str) -> list[str]:
    settings = test_settings(database_url=url)
    store = open_store(settings, get_plugin_manager(settings))
    await store.open()
    try:
        return [u.username for u in await store.list_users()]
    finally:
        await store.close()


@pytest.mark.slow
def test_processes_racing_on_sqlite_create_one_admin(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'race.db'}"
    anyio.run(users_of, url)  # migrate first: concurrent migration is the store's concern
    assert sorted(race(url)) == ["exists", "exists", "exists", "generated"]
    assert anyio.run(users_of, url) == ["admin"]


@pytest.mark.slow
def test_processes_racing_on_postgresql_create_one_admin() -> None:
    require_service("PostgreSQL", "127.0.0.1", 5432)
    import psycopg

    name = unique_name("race")
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        url = POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
        anyio.run(users_of, url)
        assert sorted(race(url)) == ["exists", "exists", "exists", "generated"]
        assert anyio.run(users_of, url) == ["admin"]
    finally:
        with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.parametrize("given", [None, "chosen-admin-password"])
def test_the_password_is_the_given_one_or_generated(tmp_path: Path, given: str | None) -> None:
    async def check() -> None:
        settings = test_settings(database_url=f"sqlite:///{tmp_path / 'one.db'}")
        store = open_store(settings, get_plugin_manager(settings))
        await store.open()
        try:
            generated = await ensure_first_admin(store, given)
            password = given or generated
            assert (generated is None) == (given is not None)
            assert password and len(password) >= 16
            assert await authenticate(store, "admin", password) is not None
            assert await ensure_first_admin(store, None) is None, "only when no user exists"
        finally:
            await store.close()

    anyio.run(check)

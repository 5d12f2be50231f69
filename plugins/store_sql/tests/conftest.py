"""Fixtures: a freshly opened, empty ``SqlStore`` on SQLite and on PostgreSQL.

Scratch databases are real: a SQLite file under ``tmp_path``, or a PostgreSQL
database created in the 127.0.0.1:5432 service and force-dropped afterwards.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from remote_store_sql.store import SqlStore
from sqlalchemy.engine import make_url

from remote_core.testing.services import POSTGRES_ADMIN_URL, require_service, unique_name

ADMIN = make_url(POSTGRES_ADMIN_URL)


@dataclass(frozen=True)
class Database:
    """A scratch database: its URL for the store, and plain SQL on a side connection."""

    kind: str
    url: str

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self.kind == "sqlite":
            with sqlite3.connect(make_url(self.url).database or "", timeout=30) as conn:
                rows = conn.execute(sql.replace("%s", "?"), params).fetchall()
            conn.close()
            return rows
        with psycopg.connect(_libpq(self.url), autocommit=True) as conn:
            cursor = conn.execute(sql.encode(), params)  # type: ignore[call-overload]
            return cursor.fetchall() if cursor.description else []


def _libpq(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def require_postgres() -> None:
    require_service("PostgreSQL", ADMIN.host or "127.0.0.1", ADMIN.port or 5432)


@contextmanager
def postgres_database(prefix: str = "store") -> Iterator[Database]:
    """A new, empty PostgreSQL database, force-dropped on exit."""
    require_postgres()
    name = unique_name(prefix)
    admin = _libpq(POSTGRES_ADMIN_URL)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"'.encode())
    try:
        yield Database("postgresql", ADMIN.set(database=name).render_as_string(False))
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())


def sqlite_database(directory: Path, name: str = "store.db") -> Database:
    return Database("sqlite", f"sqlite:///{directory / name}")


#: Tables emptied between PostgreSQL tests (the seeded tenant and the revision stay).
DATA_TABLES = ("session_events", "agent_keys", "machines", "support_codes", "sessions",
               "user_permissions", "user_client_access", "users", "releases", "secrets")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def postgres_scratch() -> Iterator[Database]:
    """One PostgreSQL database for the session's contract tests, emptied per test."""
    with postgres_database("store_contract") as database:
        yield database


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Database:
    if request.param == "sqlite":
        return sqlite_database(tmp_path)
    database: Database = request.getfixturevalue("postgres_scratch")
    present = {row[0] for row in database.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
    tables = [t for t in DATA_TABLES if t in present]
    if tables:
        database.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")
    return database


@pytest.fixture
async def store(database: Database) -> AsyncIterator[SqlStore]:
    store = SqlStore(database.url)
    await store.open()
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture
def break_keyed_query(database: Database) -> Iterator[Callable[[], Awaitable[None]]]:
    """Rename the agent-keys table so the keyed-machines query fails for real."""
    broken = False

    async def rename() -> None:
        nonlocal broken
        database.execute("ALTER TABLE agent_keys RENAME TO agent_keys_unavailable")
        broken = True

    yield rename
    if broken:
        database.execute("ALTER TABLE agent_keys_unavailable RENAME TO agent_keys")


@pytest.fixture
def make_postgres() -> Callable[[], AbstractContextManager[Database]]:
    """Make more PostgreSQL scratch databases inside a test (``with make_postgres() as db``)."""
    return postgres_database

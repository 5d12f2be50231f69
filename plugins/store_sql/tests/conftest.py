"""Fixtures: a freshly opened, empty ``SqlStore`` on SQLite and on PostgreSQL.

Scratch databases are real: a SQLite file under ``tmp_path``, or a PostgreSQL
database created in the 127.0.0.1:5432 service and force-dropped afterwards.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest
from remote_store_sql._schema import metadata
from remote_store_sql.store import SqlStore
from remote_store_sql.testing import Database, postgres_database, sqlite_database

from remote_core.records import DEFAULT_TENANT_ID

#: Tables emptied between PostgreSQL tests: every table of the schema but the tenants
#: (and Alembic's revision, which is not in it), so a new table is never missed; the
#: tenants lose all but the seeded default tenant.
DATA_TABLES = tuple(table.name for table in reversed(metadata.sorted_tables)
                    if table.name != "tenants")


@pytest.fixture(scope="session")
def postgres_scratch() -> Iterator[Database]:
    """One PostgreSQL database for the session's contract tests, emptied per test."""
    with postgres_database("store_contract") as database:
        yield database


def scratch_database(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Database:
    """An empty, migrated-or-not database of ``kind`` for one test."""
    if kind == "sqlite":
        return sqlite_database(tmp_path)
    database: Database = request.getfixturevalue("postgres_scratch")
    present = {row[0] for row in database.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
    tables = [t for t in DATA_TABLES if t in present]
    if tables:
        database.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")
    if "tenants" in present:
        database.execute(f"DELETE FROM tenants WHERE id <> '{DEFAULT_TENANT_ID}'")
    return database


@pytest.fixture
def scratch(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[str], Database]:
    """``scratch(kind)``: an empty database of that kind for this test."""
    return lambda kind: scratch_database(kind, request, tmp_path)


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, scratch: Callable[[str], Database]) -> Database:
    """The database under test, reached through the default driver of its kind."""
    return scratch(str(request.param))


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


@pytest.fixture(params=["sqlite", "postgresql"])
def database_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_empty(database_kind: str, tmp_path: Path
               ) -> Callable[[], AbstractContextManager[Database]]:
    """Make brand-new empty databases of the test's kind (``with make_empty() as db``)."""
    numbers = itertools.count()

    @contextmanager
    def make() -> Iterator[Database]:
        if database_kind == "sqlite":
            yield sqlite_database(tmp_path, f"empty-{next(numbers)}.db")
            return
        with postgres_database("store_empty") as database:
            yield database

    return make


@pytest.fixture
def empty(make_empty: Callable[[], AbstractContextManager[Database]]) -> Iterator[Database]:
    """A brand-new empty database (one of each kind)."""
    with make_empty() as database:
        yield database

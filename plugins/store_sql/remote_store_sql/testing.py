"""Scratch databases for tests and benchmarks of this store: real ones.

A SQLite file in a given directory, or a PostgreSQL database created in the
service at ``REMOTE_SUPPORT_TEST_POSTGRES_URL`` (default 127.0.0.1:5432, user
postgres) and force-dropped afterwards. Plain SQL runs on a side connection,
outside the store, so tests can damage or inspect the database directly.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from remote_core.testing.services import POSTGRES_ADMIN_URL, require_service, unique_name

__all__ = ["Database", "all_rows", "postgres_database", "require_postgres", "sqlite_database"]

ADMIN = make_url(POSTGRES_ADMIN_URL)


@dataclass(frozen=True)
class Database:
    """A scratch database: its URL for the store, and plain SQL on a side connection."""

    kind: str
    url: str

    def with_driver(self, driver: str) -> Database:
        """The same database reached through an explicitly named driver (``sqlite+aiosqlite``)."""
        return Database(self.kind, f"{driver}://{self.url.split('://', 1)[1]}")

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run one statement (``%s`` placeholders) and return its rows."""
        if self.kind == "sqlite":
            return _sqlite_execute(make_url(self.url).database or "", sql, params)
        with psycopg.connect(_libpq(self.url), autocommit=True) as conn:
            cursor = conn.cursor()
            cursor.execute(sql.encode(), params)
            return cursor.fetchall() if cursor.description else []


def _sqlite_execute(path: str, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path, timeout=30)
    try:
        with conn:
            return conn.execute(sql.replace("%s", "?"), params).fetchall()
    finally:
        conn.close()


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
    """A SQLite database file (created on first use) in ``directory``."""
    return Database("sqlite", f"sqlite:///{directory / name}")


def all_rows(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, ordered by primary key, read through the schema's types,
    so a SQLite database and a PostgreSQL one holding the same records compare equal."""
    from ._schema import metadata

    parsed = make_url(url)
    driver = "sqlite+pysqlite" if parsed.get_backend_name() == "sqlite" else "postgresql+psycopg"
    engine = sa.create_engine(parsed.set(drivername=driver))
    try:
        with engine.connect() as conn:
            return {table.name: [tuple(row) for row in conn.execute(
                        sa.select(table).order_by(*table.primary_key.columns))]
                    for table in metadata.sorted_tables}
    finally:
        engine.dispose()

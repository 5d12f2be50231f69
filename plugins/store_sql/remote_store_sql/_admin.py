"""``SqlAdmin``: backups, restores, a verified copy into PostgreSQL, and health answers.

Run from the command line beside servers using the same database, on plain
synchronous engines (psycopg for PostgreSQL, pysqlite for SQLite):

* SQLite backups use SQLite's online backup API (``sqlite3.Connection.backup``),
  which copies a consistent snapshot while writers carry on; a restore runs the
  same API the other way, into the live file.
* PostgreSQL backups are ``pg_dump`` custom-format archives (``pg_restore`` reads
  them), made by the installed PostgreSQL client; the password reaches it in its
  environment, never on its command line.
* :meth:`SqlAdmin.copy_to` reads the source inside one read transaction (one
  snapshot) and writes the target inside one transaction, which it commits only
  once every table's row count and primary keys match.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc
from sqlalchemy.engine import Connection, Engine

from remote_core.errors import StoreError
from remote_core.interfaces import StoreAdmin
from remote_core.records import DEFAULT_TENANT_ID

from . import _migrate, _schema
from ._engine import _describe, _sqlite_setup, _where, resolve_url

__all__ = ["BATCH_ROWS", "SqlAdmin"]

BATCH_ROWS = 1000
"""Rows read and written per batch by :meth:`SqlAdmin.copy_to`."""

PG_CLIENT_HINT = ("install the PostgreSQL client of the server's major version or newer "
                  "(Debian: apt install postgresql-client)")


class SqlAdmin(StoreAdmin):
    """The operator's tools for one SQLite or PostgreSQL database URL."""

    def __init__(self, url: str) -> None:
        self.url = resolve_url(url)
        self.dialect = self.url.get_backend_name()

    # -- health ---------------------------------------------------------------------
    def schema(self) -> tuple[str | None, str]:
        if self.dialect == "sqlite" and not self._sqlite_path().exists():
            if not self._sqlite_path().parent.is_dir():
                raise StoreError(f"the directory of {self._sqlite_path()} does not exist")
            return None, _migrate.head_revision()
        with self._connect() as conn:
            return _migrate.current_revision(conn), _migrate.head_revision()

    def clock(self) -> datetime | None:
        if self.dialect == "sqlite":
            return None
        with self._connect() as conn:
            now = conn.execute(sa.text("SELECT now()")).scalar_one()
        return now if isinstance(now, datetime) else None

    # -- backup ---------------------------------------------------------------------
    def backup(self, path: Path) -> str:
        if path.exists():
            raise StoreError(f"{path} exists: name a new file for the backup")
        if not path.parent.is_dir():
            raise StoreError(f"directory {path.parent} does not exist")
        revision, _head = self.schema()
        if revision is None:
            raise StoreError(f"the database at {_where(self.url)} has no remote-support "
                             "schema: nothing to back up")
        if self.dialect == "sqlite":
            _write_private(path, self._sqlite_backup)
            kind = "SQLite online backup"
        else:
            _write_private(path, self._pg_dump)
            kind = "pg_dump custom-format archive"
        return (f"backup of {_where(self.url)} (schema {revision}) written to {path} "
                f"({kind}, {path.stat().st_size} bytes)")

    def _sqlite_backup(self, target: Path) -> None:
        source = sqlite3.connect(self._sqlite_path(), timeout=30)
        try:
            copy = sqlite3.connect(target)
            try:
                source.backup(copy)
                # One self-contained file, readable from read-only media.
                copy.execute("PRAGMA journal_mode = DELETE")
            finally:
                copy.close()
        except sqlite3.Error as error:
            raise StoreError(f"cannot back up {_where(self.url)}: {error}") from error
        finally:
            source.close()

    def _pg_dump(self, target: Path) -> None:
        _run_pg_tool("pg_dump", ["--format=custom", "--no-owner", "--no-privileges",
                                 f"--file={target}", f"--dbname={self._conninfo()}"],
                     self._pg_env())

    # -- restore --------------------------------------------------------------------
    def restore(self, path: Path, *, force: bool = False) -> str:
        if not path.is_file():
            raise StoreError(f"no backup file at {path}")
        revision = (self._sqlite_file_revision(path) if self.dialect == "sqlite"
                    else self._pg_archive_revision(path))
        known = _migrate.revisions()
        if revision not in known:
            raise StoreError(f"{path} holds schema {revision!r}, newer than this release "
                             f"knows (up to {known[-1]!r}): restore it with the release "
                             "that wrote it, or a newer one")
        if self.dialect != "sqlite" or self._sqlite_path().exists():
            held = self._rows_held()
            if held and not force:
                raise StoreError(f"the database at {_where(self.url)} holds data ({held}): "
                                 "restore over it only with --force, which replaces it")
        if self.dialect == "sqlite":
            self._sqlite_restore(path)
        else:
            self._pg_restore(path)
        engine = self._engine()
        try:
            with engine.begin() as conn:
                _migrate.upgrade(conn)
        finally:
            engine.dispose()
        return (f"restored {path} (schema {revision}) into {_where(self.url)}, now at "
                f"schema {known[-1]}")

    def _sqlite_file_revision(self, path: Path) -> str:
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
            finally:
                conn.close()
        except sqlite3.Error:
            raise StoreError(f"{path} is not a SQLite backup of remote-support") from None
        if row is None:
            raise StoreError(f"{path} is not a SQLite backup of remote-support")
        return str(row[0])

    def _sqlite_restore(self, path: Path) -> None:
        target = self._sqlite_path()
        if not target.exists():
            engine = self._engine()  # creates the file privately, in WAL mode
            engine.connect().close()
            engine.dispose()
        source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            live = sqlite3.connect(target, timeout=30)
            try:
                source.backup(live)
            finally:
                live.close()
        except sqlite3.Error as error:
            raise StoreError(f"cannot restore into {_where(self.url)}: {error}") from error
        finally:
            source.close()

    def _pg_archive_revision(self, path: Path) -> str:
        with path.open("rb") as file:
            if file.read(5) != b"PGDMP":
                raise StoreError(f"{path} is not a pg_dump custom-format archive")
        listing = _run_pg_tool("pg_restore", ["--data-only", "--table=alembic_version",
                                              "--file=-", str(path)], self._pg_env())
        lines = iter(listing.splitlines())
        for line in lines:
            if line.startswith("COPY ") and "alembic_version" in line:
                revision = next(lines, "")
                if revision and revision != "\\.":
                    return revision.strip()
        raise StoreError(f"{path} is not a backup of remote-support (no schema revision)")

    def _pg_restore(self, path: Path) -> None:
        engine = self._engine()
        try:
            with engine.begin() as conn:
                _migrate.exclusive(conn, "migrate")
                names = [t.name for t in _schema.metadata.sorted_tables] + ["alembic_version"]
                conn.execute(sa.text("DROP TABLE IF EXISTS "
                                     + ", ".join(f'"{n}"' for n in names) + " CASCADE"))
        except exc.SQLAlchemyError as error:
            raise self._unreachable(error) from error
        finally:
            engine.dispose()
        _run_pg_tool("pg_restore", ["--no-owner", "--no-privileges", "--single-transaction",
                                    "--exit-on-error", f"--dbname={self._conninfo()}",
                                    str(path)], self._pg_env())

    # -- copy -----------------------------------------------------------------------
    def copy_to(self, target_url: str, progress: Callable[[str], None]) -> list[tuple[str, int]]:
        target = SqlAdmin(target_url)
        if target.dialect != "postgresql":
            raise StoreError("the target must be a PostgreSQL URL (postgresql://user@host/db)")
        if _where(target.url) == _where(self.url) and target.dialect == self.dialect:
            raise StoreError("the target is the source database")
        revision, head = self.schema()
        if revision != head:
            raise StoreError(f"the source database is at schema {revision!r}, not this "
                             f"release's {head!r}: run remote-support migrate on it first")
        source_engine, target_engine = self._engine(), target._engine()
        try:
            with source_engine.connect() as source, target._transaction(target_engine) as dest:
                _migrate.upgrade(dest)
                held = _rows_held(dest)
                if held:
                    raise StoreError(f"the target database at {_where(target.url)} holds "
                                     f"data ({held}): migrate-db copies into an empty one "
                                     "only")
                source.execution_options(remote_write=False)
                with source.begin():
                    copied = _copy_tables(source, dest, progress)
            return copied
        except exc.SQLAlchemyError as error:
            raise StoreError(f"copy failed, the target is unchanged: {_describe(error)}"
                             ) from error
        finally:
            source_engine.dispose()
            target_engine.dispose()

    # -- plumbing -------------------------------------------------------------------
    def _sqlite_path(self) -> Path:
        return Path(self.url.database or "")

    def _engine(self) -> Engine:
        if self.dialect == "sqlite":
            engine = sa.create_engine(self.url.set(drivername="sqlite+pysqlite"))
            _sqlite_setup(engine)
            return engine
        try:
            return sa.create_engine(self.url.set(drivername="postgresql+psycopg"),
                                    connect_args={"connect_timeout": 10})
        except ImportError as error:
            raise StoreError("PostgreSQL tools need the psycopg driver "
                             "(pip install 'remote-store-sql[postgres]')") from error

    @contextmanager
    def _connect(self) -> Iterator[Connection]:
        engine = self._engine()
        try:
            with engine.connect() as conn:
                conn.execution_options(remote_write=False)
                with conn.begin():
                    yield conn
        except exc.SQLAlchemyError as error:
            raise self._unreachable(error) from error
        finally:
            engine.dispose()

    @contextmanager
    def _transaction(self, engine: Engine) -> Iterator[Connection]:
        try:
            conn = engine.connect()
        except exc.SQLAlchemyError as error:
            raise self._unreachable(error) from error
        with conn, conn.begin():
            yield conn

    def _unreachable(self, error: exc.SQLAlchemyError) -> StoreError:
        return StoreError(f"cannot reach the database at {_where(self.url)}: "
                          f"{_describe(error)}")

    def _rows_held(self) -> str:
        with self._connect() as conn:
            return _rows_held(conn)

    def _conninfo(self) -> str:
        """A libpq URL without the password (which goes in ``PGPASSWORD``)."""
        return self.url.set(drivername="postgresql", password=None).render_as_string(
            hide_password=False)

    def _pg_env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.url.password:
            env["PGPASSWORD"] = str(self.url.password)
        return env


def _rows_held(conn: Connection) -> str:
    """What the database holds beyond an empty schema ("" when nothing): the seeded
    default tenant is part of the schema, not data."""
    present = set(sa.inspect(conn).get_table_names())
    counts = []
    for table in _schema.metadata.sorted_tables:
        if table.name not in present:
            continue
        query = sa.select(sa.func.count()).select_from(table)
        if table is _schema.tenants:
            query = query.where(table.c.id != DEFAULT_TENANT_ID)
        if rows := conn.execute(query).scalar_one():
            counts.append(f"{rows} rows in {table.name}")
    return ", ".join(counts)


def _primary_keys(conn: Connection, table: sa.Table) -> list[tuple[Any, ...]]:
    columns = list(table.primary_key.columns)
    return sorted(tuple(row) for row in conn.execute(sa.select(*columns)))


def _copy_tables(source: Connection, dest: Connection,
                 progress: Callable[[str], None]) -> list[tuple[str, int]]:
    """Every table in dependency order, in batches; then sequences and verification."""
    tables = _schema.metadata.sorted_tables
    for table in reversed(tables):  # only the schema's seed rows are there
        dest.execute(table.delete())
    copied = []
    for table in tables:
        rows = 0
        ordered = sa.select(table).order_by(*table.primary_key.columns)
        result = source.execution_options(yield_per=BATCH_ROWS).execute(ordered)
        for batch in result.partitions(BATCH_ROWS):
            dest.execute(table.insert(), [dict(row._mapping) for row in batch])
            rows += len(batch)
        copied.append((table.name, rows))
        progress(f"copied {rows} rows of {table.name}")
    for table in tables:
        for column in table.primary_key.columns:
            if column.autoincrement is True:
                top = sa.func.max(column)
                sequence = sa.func.pg_get_serial_sequence(table.name, column.name)
                dest.execute(sa.select(sa.func.setval(sequence, sa.func.coalesce(top, 1),
                                                      top.is_not(None))))
    for table in tables:
        if _primary_keys(source, table) != _primary_keys(dest, table):
            raise StoreError(f"verification failed for {table.name}: the rows differ; "
                             "nothing was committed to the target")
    progress(f"verified row counts and primary keys of {len(tables)} tables")
    return copied


def _write_private(path: Path, write: Callable[[Path], None]) -> None:
    """Write through a private temporary file next to ``path``, renamed when complete:
    a backup holds password hashes and the token-signing keys."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    partial = Path(name)
    try:
        partial.unlink()  # the tools create it themselves; keep the mode private
        old = os.umask(0o077)
        try:
            write(partial)
        finally:
            os.umask(old)
        os.chmod(partial, 0o600)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def _run_pg_tool(tool: str, args: list[str], env: dict[str, str]) -> str:
    """Run ``pg_dump`` or ``pg_restore``; their last error line on failure."""
    exe = shutil.which(tool)
    if exe is None:
        raise StoreError(f"{tool} is not installed: {PG_CLIENT_HINT}")
    done = subprocess.run([exe, *args], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        hint = f" ({PG_CLIENT_HINT})" if "version mismatch" in done.stderr else ""
        said = next((line for line in lines if "error" in line), lines[-1] if lines else "")
        raise StoreError(f"{tool} failed: {said or f'exit {done.returncode}'}{hint}")
    return done.stdout

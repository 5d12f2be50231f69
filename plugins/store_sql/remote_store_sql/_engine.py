"""How the async server reaches the database: one small ``Runner`` per engine.

Every store operation is a plain synchronous function of a SQLAlchemy
``Connection`` run inside one transaction. A runner executes it either on an
async engine (``AsyncConnection.run_sync``: asyncpg, aiosqlite, psycopg async)
or on a sync engine in a worker thread (pysqlite, psycopg): one thread hop per
transaction. ``bench/store.py`` measures both; the default drivers below are
the faster ones there (see the README). Any other installed SQLAlchemy driver
of SQLite or PostgreSQL works when the URL names it.

SQLite gets WAL, a busy timeout and foreign keys on every connection, and its
write transactions start with ``BEGIN IMMEDIATE`` so that writers queue on the
busy timeout instead of failing a read-to-write upgrade. Within one process the
writers queue on a lock first, in order: SQLite takes one writer at a time, and
its busy handler makes the others sleep and poll (up to 100 ms a turn), which
under a storm of admissions left the file idle while dozens of threads slept.
The writer whose turn it is commits every write queued behind it too, each in
a savepoint of one transaction (group commit): a write's caller still returns
once its write is committed, and a write that fails fails alone, but a storm
pays one thread hop, one ``BEGIN IMMEDIATE`` and one commit for a whole queue.
Reads queue the same way for SQLite's threads: the reads waiting when a thread
comes free are run together in one read transaction (each sees the database as
it is when the batch starts, after it was asked). Under an admission storm the
server is bound by one interpreter, and the per-transaction work was a fifth of it.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

import anyio.to_thread
import sqlalchemy as sa
from sqlalchemy import event, exc
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from remote_core.errors import ConflictError, StoreError

__all__ = ["DEFAULT_DRIVERS", "Runner", "make_runner", "resolve_url"]

T = TypeVar("T")

DEFAULT_DRIVERS = {"sqlite": "pysqlite", "postgresql": "asyncpg"}
"""The driver a plain ``sqlite://`` or ``postgresql://`` URL selects (CONTRACT 4)."""

ASYNC_DRIVERS = {"aiosqlite", "asyncpg", "psycopg_async"}
"""Drivers run on an async engine; every other one on a sync engine in worker threads."""

CALLS_PER_TRANSACTION = 64
"""Queued SQLite reads or writes run together at most: a turn stays short."""

SQLITE_BUSY_TIMEOUT_MS = 30_000
SQLITE_CONNECTIONS = 8
"""Pooled connections to a SQLite file, and worker threads using them at once: a thread
beyond the pool would wait on it, or open (and set up) a connection of its own to close
after one transaction."""


def resolve_url(url: str) -> sa.URL:
    """The URL with the project's default driver filled in when none is named."""
    try:
        parsed = make_url(url)
    except (exc.ArgumentError, ValueError):
        raise StoreError("the database URL is malformed; use sqlite:///path or "
                         "postgresql://user@host:port/db") from None
    backend = parsed.get_backend_name()
    if backend not in DEFAULT_DRIVERS:
        raise StoreError(f"database URL scheme {parsed.drivername!r} is not supported; "
                         "use sqlite:///path or postgresql://user@host:port/db")
    if backend == "sqlite" and parsed.database in (None, "", ":memory:"):
        raise StoreError("SQLite needs a database file (sqlite:///path): an in-memory "
                         "database is neither shared between connections nor kept")
    if "+" not in parsed.drivername:
        parsed = parsed.set(drivername=f"{backend}+{DEFAULT_DRIVERS[backend]}")
    return parsed


class Runner:
    """Runs ``fn(conn, *args)`` in one transaction and maps driver errors to store errors."""

    def __init__(self, url: sa.URL) -> None:
        self.url = url
        self.dialect = url.get_backend_name()
        self.is_async = url.get_driver_name() in ASYNC_DRIVERS
        options: dict[str, Any] = {}
        if self.dialect == "sqlite":
            options["connect_args"] = {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
            if not self.is_async:
                options["connect_args"]["check_same_thread"] = False
                options.update(pool_size=SQLITE_CONNECTIONS, max_overflow=0)
        else:
            options.update(pool_size=10, max_overflow=20)
        self._async: AsyncEngine | None = None
        self._probe: AsyncEngine | Engine | None = None
        self._probe_lock = anyio.Lock()
        self._probes = 0  # probes done, and how the last one went
        self._probed: StoreError | None = None
        self._writer = anyio.Lock() if self.dialect == "sqlite" else None  # see the module
        self._writes: list[_Queued] = []  # SQLite calls waiting for their turn, in order
        self._reads: list[_Queued] = []
        self._threads = (anyio.CapacityLimiter(SQLITE_CONNECTIONS) if self.dialect == "sqlite"
                         else None)  # None: anyio's default
        try:
            if self.is_async:
                self._async = create_async_engine(url, **options)
                self.engine: Engine = self._async.sync_engine
            else:
                self.engine = sa.create_engine(url, **options)
            if self.dialect != "sqlite":  # a server's own connection: see ping()
                self._probe = (create_async_engine(url, poolclass=NullPool) if self.is_async
                               else sa.create_engine(url, poolclass=NullPool))
        except ImportError as error:
            extra = (" (pip install 'remote-store-sql[postgres]')"
                     if self.dialect == "postgresql" else "")
            raise StoreError(
                f"the database driver of {url.drivername!r} is not installed ({error}); "
                f"plain {self.dialect}:// URLs use {DEFAULT_DRIVERS[self.dialect]}{extra}"
            ) from error
        if self.dialect == "sqlite":
            _sqlite_setup(self.engine)
        self._options_for: dict[bool, dict[str, Any]] = {
            write: {"remote_write": write} for write in (True, False)}
        if self.dialect != "sqlite":
            # A read runs without BEGIN and COMMIT, two round trips fewer: under READ
            # COMMITTED (the default) each statement has a snapshot of its own anyway.
            self._options_for[False]["isolation_level"] = "AUTOCOMMIT"
        # A connection's options set per transaction cost the dialect a call each time.
        self._engine_for = {write: self.engine.execution_options(**options)
                            for write, options in self._options_for.items()}

    @property
    def writes_waiting(self) -> int:
        """SQLite writes queued for the writer's turn (committed together when it comes)."""
        return len(self._writes)

    @property
    def reads_waiting(self) -> int:
        """SQLite reads queued for a thread (run together when one comes free)."""
        return len(self._reads)

    async def write(self, fn: Callable[..., T], *args: Any) -> T:
        return await self._run(fn, args, write=True)

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        return await self._run(fn, args, write=False)

    async def _run(self, fn: Callable[..., T], args: tuple[Any, ...], *, write: bool) -> T:
        if self._writer is None or self._threads is None or self._async is not None:
            if write and self._writer is not None:
                async with self._writer:
                    return await self._run_now(fn, args, write=write)
            return await self._run_now(fn, args, write=write)
        mine = _Queued(fn, args)
        queue, turn = (self._writes, self._writer) if write else (self._reads, self._threads)
        queue.append(mine)
        try:
            while not mine.taken:  # a turn takes the queue's head; this call is in it, or later
                async with turn:  # first come, first served
                    if not mine.taken:
                        await self._run_batch(queue, write=write)
        finally:
            if not mine.taken:  # cancelled while it waited
                queue.remove(mine)
        await mine.finished.wait()  # a batch another caller's turn took
        if mine.error is not None:
            raise mine.error
        return mine.result  # type: ignore[no-any-return]

    async def _run_batch(self, queue: list[_Queued], *, write: bool) -> None:
        batch = queue[:CALLS_PER_TRANSACTION]
        del queue[:len(batch)]
        for item in batch:
            item.taken = True
        try:
            with anyio.CancelScope(shield=True):  # the batch holds other callers' calls
                # A write's turn (the lock) takes one of the threads; a read's turn is one.
                await anyio.to_thread.run_sync(self._in_thread_batch, batch, write,
                                               limiter=self._threads if write else None)
        except BaseException as error:  # no thread ran it: nobody may wait for nothing
            for item in batch:
                item.error = item.error or StoreError(
                    f"the database call did not run: {type(error).__name__}")
            raise
        finally:
            for item in batch:
                item.finished.set()

    def _in_thread_batch(self, batch: list[_Queued], write: bool) -> None:
        """Run ``batch`` in one transaction, each write in a savepoint of its own (a write
        that fails fails alone); every call ends with its result or its (store) error."""
        try:
            with self._engine_for[write].connect() as conn, conn.begin():
                for item in batch:
                    try:
                        with conn.begin_nested() if write else contextlib.nullcontext():
                            item.result = item.fn(conn, *item.args)
                    except Exception as error:
                        item.error = _store_error(error, self.url)
        except Exception as error:  # the transaction itself failed: nothing was committed
            failed = _store_error(error, self.url)
            for item in batch:
                item.error = item.error or failed

    async def _run_now(self, fn: Callable[..., T], args: tuple[Any, ...], *, write: bool) -> T:
        try:
            if self._async is not None:
                async with self._async.connect() as aconn:
                    await aconn.execution_options(**self._options_for[write])
                    async with aconn.begin():
                        return await aconn.run_sync(fn, *args)
            return await anyio.to_thread.run_sync(partial(self._in_thread, fn, args, write))
        except (exc.SQLAlchemyError, OSError) as error:
            raise _store_error(error, self.url) from error

    async def ping(self) -> None:
        """Ask the database for ``SELECT 1``; raises :class:`StoreError` if it does not answer.

        A database server is asked on a connection of the ping's own, outside the pool: in
        a storm of admissions every pooled connection is busy and the pool's queue is
        seconds long, and a readiness check waiting in it would make the load balancer
        take a working node out (and, with ``shutdown-sessions``, cut all its agents off,
        who then storm the other nodes).

        Anyone may ask (``/readyz`` is public): one probe at a time, and the callers that
        waited for it share its answer, so a flood of checks holds at most one connection
        of the database's and opens one per probe, never one per caller."""
        probe = self._probe
        if probe is None:
            await self.read(_select_one)
            return
        seen = self._probes
        async with self._probe_lock:
            if self._probes == seen:  # no probe finished while this caller waited
                self._probed = await self._probe_once(probe)
                self._probes += 1
            failed = self._probed
        if failed is not None:
            raise failed

    async def _probe_once(self, probe: AsyncEngine | Engine) -> StoreError | None:
        try:
            if isinstance(probe, AsyncEngine):
                async with probe.connect() as aconn:
                    await aconn.execute(_SELECT_ONE)
            else:
                await anyio.to_thread.run_sync(_probe_sync, probe)
        except exc.SQLAlchemyError as error:
            return StoreError(f"database error: {_describe(error)}")
        except OSError as error:
            return StoreError(f"cannot reach the database at {_where(self.url)}: "
                              f"{type(error).__name__}: {error}")
        return None

    def _in_thread(self, fn: Callable[..., T], args: tuple[Any, ...], write: bool) -> T:
        with self._engine_for[write].connect() as conn, conn.begin():
            return fn(conn, *args)

    async def dispose(self) -> None:
        if self._async is not None:
            await self._async.dispose()
        else:
            await anyio.to_thread.run_sync(self.engine.dispose)
        if isinstance(self._probe, AsyncEngine):
            await self._probe.dispose()
        elif self._probe is not None:
            self._probe.dispose()


@dataclass(eq=False)
class _Queued:
    """One store call waiting for its turn, and then how it went."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    taken: bool = False
    finished: anyio.Event = field(default_factory=anyio.Event)
    result: Any = None
    error: Exception | None = None


def _store_error(error: Exception, url: sa.URL) -> Exception:
    """The store's error for a driver's error (caused by it); any other error as it is."""
    mapped: Exception
    if isinstance(error, exc.IntegrityError):
        mapped = ConflictError(_describe(error))
    elif isinstance(error, exc.SQLAlchemyError):
        mapped = StoreError(f"database error: {_describe(error)}")
    elif isinstance(error, OSError):  # some drivers (asyncpg) let connection failures through
        mapped = StoreError(f"cannot reach the database at {_where(url)}: "
                            f"{type(error).__name__}: {error}")
    else:
        return error
    mapped.__cause__ = error
    return mapped


_SELECT_ONE = sa.text("SELECT 1")


def _select_one(conn: Connection) -> bool:
    return bool(conn.execute(_SELECT_ONE).scalar_one() == 1)


def _probe_sync(engine: Engine) -> None:
    with engine.connect() as conn:
        conn.execute(_SELECT_ONE)


def make_runner(url: str) -> Runner:
    return Runner(resolve_url(url))


def _describe(error: exc.SQLAlchemyError) -> str:
    """The driver's message, first line only: never the statement's parameters."""
    orig = getattr(error, "orig", None)
    text = str(orig if orig is not None else error).strip().splitlines()
    return f"{type(orig or error).__name__}: {text[0] if text else ''}"


def _where(url: sa.URL) -> str:
    """Host, port and database, never credentials."""
    if url.get_backend_name() == "sqlite":
        return str(url.database)
    return f"{url.host}:{url.port or 5432}/{url.database}"


def _create_private_file(path: str) -> None:
    """Create the database file readable by its owner only: it holds password hashes and
    the token-signing secret. SQLite gives its WAL and shared-memory files the same mode."""
    # An existing file is left alone; a missing directory is reported by sqlite3 itself.
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))


def _enable_wal(cursor: Any) -> None:
    """Switch the file to WAL (it stays so). The switch needs the file to itself, and
    SQLite answers "locked" at once, without its busy handler, while another
    connection opens the same new database: retry within the busy timeout."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            if str(cursor.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                cursor.execute("PRAGMA journal_mode = WAL")
            return
        except Exception as exc:  # the driver's OperationalError; anything else re-raises
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.005)


def _sqlite_setup(engine: Engine) -> None:
    """A private file; WAL, busy timeout, foreign keys; transactions the project controls."""

    @event.listens_for(engine, "do_connect")
    def _before_connect(_dialect: Any, _record: Any, _cargs: Any, _cparams: Any) -> None:
        database = engine.url.database
        if database and not database.startswith("file:"):
            _create_private_file(database)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # the driver must not emit BEGIN on its own
        cursor = dbapi_conn.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        _enable_wal(cursor)
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        write = conn.get_execution_options().get("remote_write", True)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

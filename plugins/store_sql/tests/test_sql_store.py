"""What is particular to the SQL store: NULL-tolerant reads, drivers and URLs, SQLite
settings, races between separate engines (as between server processes), error text."""

from __future__ import annotations

import stat
import subprocess
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import anyio
import pytest
from remote_store_sql import _engine
from remote_store_sql.store import SqlStore
from remote_store_sql.testing import Database
from sqlalchemy import event
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from remote_core.errors import ConflictError, StoreError
from remote_core.plugins import get_plugin_manager
from remote_core.records import DEFAULT_TENANT_ID, Machine, MachineFilter, MachineReport
from remote_core.settings import PluginSettings
from remote_core.testing.store_contract import StoreContract, key_hash, make_code, make_user

pytestmark = pytest.mark.anyio

WHEN = "2030-01-02 03:04:05"


async def test_reads_tolerate_null_in_every_nullable_column(
        store: SqlStore, database: Database) -> None:
    database.execute("INSERT INTO machines (agent_id, tags) VALUES ('bare', %s)",
                     ("{}" if database.kind == "postgresql" else "[]",))
    database.execute("INSERT INTO agent_keys (id, agent_id, key_hash) VALUES ('k1', 'bare', %s)",
                     ("a" * 64,))
    database.execute("INSERT INTO sessions (id, agent_id) VALUES ('s1', 'bare')")
    database.execute("INSERT INTO support_codes (code, expires_at) VALUES ('AAA-BBB-CCC', %s)",
                     (WHEN,))
    database.execute("INSERT INTO users (id, username, password_hash) VALUES ('u1', 'x', 'h')")
    database.execute("INSERT INTO releases (version, download_url, checksum_sha256) "
                     "VALUES ('1.0.0', 'https://example.org/a', %s)", ("b" * 64,))
    database.execute("INSERT INTO session_events (kind) VALUES ('bare')")

    assert await store.get_machine("bare") == Machine(agent_id="bare")
    assert [m.agent_id for m in await store.list_machines(MachineFilter(status="offline"))] == [
        "bare"]
    assert (await store.restore_machines()).keyed_agent_ids == {"bare"}
    key = await store.find_agent_key("a" * 64)
    assert key is not None and (key.label, key.tenant_id) == ("", DEFAULT_TENANT_ID)
    session = await store.get_session("s1")
    assert session is not None
    assert (session.is_managed, session.source, session.session_type) == (False, "", 0)
    code = await store.get_support_code("AAA-BBB-CCC")
    assert code is not None and code.technician_name == ""
    assert code.expires_at == datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    user = await store.get_user("u1")
    assert user is not None
    assert (user.role, user.disabled, user.permissions, user.client_access) == (
        "technician", False, (), ())
    release = await store.get_release("1.0.0")
    assert release is not None and (release.mandatory, release.notes) == (False, "")
    [event] = await store.list_events()
    assert (event.detail, event.tenant_id) == ({}, DEFAULT_TENANT_ID)

    revived = await store.upsert_machine(MachineReport(agent_id="bare", hostname="pc"))
    assert (revived.hostname, revived.tags, revived.status) == ("pc", (), "offline")


async def test_machine_tags_are_never_null(database: Database, store: SqlStore) -> None:
    with pytest.raises(Exception, match=r"(?i)null"):
        database.execute("INSERT INTO machines (agent_id, tags) VALUES ('x', NULL)")
    database.execute("INSERT INTO machines (agent_id) VALUES ('defaulted')")
    machine = await store.get_machine("defaulted")
    assert machine is not None and machine.tags == ()


async def test_separate_engines_race_like_separate_servers(database: Database) -> None:
    """Four stores with their own pools on one database: one first admin, one secret,
    one winner of a support code."""
    stores = [SqlStore(database.url) for _ in range(4)]
    try:
        for store in stores:
            await store.open()
        code = await stores[0].create_support_code(make_code())
        admins: list[int] = []
        secrets: list[str] = []
        binders: list[str] = []

        async def contend(i: int, store: SqlStore) -> None:
            if await store.create_first_admin(make_user(f"admin{i}", role="admin")):
                admins.append(i)
            secrets.append(await store.get_or_create_secret("jwt", f"secret-{i}"))
            for j in range(5):
                agent = f"a-{i}-{j}"
                if await store.consume_support_code(code.code, agent, str(uuid.uuid4()),
                                                    datetime.now(UTC)):
                    binders.append(agent)

        async with anyio.create_task_group() as tg:
            for i, store in enumerate(stores):
                tg.start_soon(contend, i, store)
        assert len(admins) == 1 and len(set(secrets)) == 1 and len(binders) == 1
    finally:
        for store in stores:
            await store.close()


async def test_errors_never_carry_statement_parameters(store: SqlStore) -> None:
    await store.create_machine("m-1")
    digest = key_hash()
    await store.add_agent_key("m-1", digest)
    with pytest.raises(ConflictError) as raised:
        await store.add_agent_key("m-1", digest)
    assert digest not in str(raised.value)


async def test_ping_is_false_when_the_database_cannot_be_reached(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'no-such-directory' / 'x.db'}")
    try:
        assert await store.ping() is False
    finally:
        await store.close()


@pytest.mark.parametrize("driver", ["postgresql", "postgresql+psycopg"])
async def test_an_unreachable_server_is_a_store_error(driver: str) -> None:
    store = SqlStore(f"{driver}://postgres:hunter2@127.0.0.1:1/nowhere")
    try:
        assert await store.ping() is False
        with pytest.raises(StoreError) as raised:
            await store.open()
        assert "hunter2" not in str(raised.value)
    finally:
        await store.close()


async def test_sqlite_files_are_private(tmp_path: Path) -> None:
    path = tmp_path / "private.db"
    store = SqlStore(f"sqlite:///{path}")
    try:
        await store.open()
        await store.get_or_create_secret("jwt", "signing-key")
        files = [path, path.with_name("private.db-wal"), path.with_name("private.db-shm")]
        assert {oct(stat.S_IMODE(f.stat().st_mode)) for f in files} == {oct(0o600)}
    finally:
        await store.close()


async def test_sqlite_connection_settings(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path}/pragmas.db")
    try:
        await store.open()

        def pragmas(conn: Connection) -> tuple[object, ...]:
            return tuple(conn.exec_driver_sql(f"PRAGMA {name}").scalar()
                         for name in ("journal_mode", "foreign_keys", "busy_timeout"))

        assert await store.runner.read(pragmas) == ("wal", 1, _engine.SQLITE_BUSY_TIMEOUT_MS)
    finally:
        await store.close()


class _HeldWriter:
    """A SQLite store whose writer (or threads) calls hold until :meth:`release`, with its
    commits counted and a scratch table to write rows to."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store
        self.commits = 0
        self.holding = 0
        self._lock = threading.Lock()
        self._release = threading.Event()
        event.listen(store.runner.engine, "commit", self._count)

    def _count(self, _conn: Connection) -> None:
        self.commits += 1

    async def hold(self, *, read: bool = False) -> None:
        """Hold the writer (or, with ``read``, one of the threads) until released."""
        def held(_conn: Connection) -> None:
            with self._lock:
                self.holding += 1
            self._release.wait(10)

        await (self.store.runner.read if read else self.store.runner.write)(held)

    async def started(self, holders: int = 1) -> None:
        await _until(lambda: self.holding, holders, "holders")

    async def queued(self, count: int, *, reads: bool = False) -> None:
        runner = self.store.runner
        await _until(lambda: runner.reads_waiting if reads else runner.writes_waiting, count,
                     "calls queued")

    def release(self) -> None:
        self._release.set()

    async def insert(self, *rows: int) -> int:
        def insert(conn: Connection) -> int:
            for row in rows:
                conn.exec_driver_sql(f"INSERT INTO scratch (id) VALUES ({row})")
            return rows[0]

        return await self.store.runner.write(insert)

    async def rows(self) -> list[int]:
        def rows(conn: Connection) -> list[int]:
            return [r[0] for r in conn.exec_driver_sql("SELECT id FROM scratch ORDER BY id")]

        return await self.store.runner.read(rows)


async def _until(count: Callable[[], int], wanted: int, what: str) -> None:
    for _ in range(1000):
        if count() == wanted:
            return
        await anyio.sleep(0.01)
    raise AssertionError(f"{count()} {what}, not {wanted}")


@pytest.fixture
async def held_writer(tmp_path: Path) -> AsyncIterator[_HeldWriter]:
    store = SqlStore(f"sqlite:///{tmp_path}/writes.db")
    try:
        await store.open()
        await store.runner.write(
            lambda conn: conn.exec_driver_sql("CREATE TABLE scratch (id INTEGER PRIMARY KEY)"))
        yield _HeldWriter(store)
    finally:
        await store.close()


async def test_sqlite_writes_queued_behind_a_writer_commit_together(
        held_writer: _HeldWriter) -> None:
    """Group commit: the writes that queued while one held the file are committed in one
    transaction; each caller gets its own result, and a write that fails fails alone."""
    results: dict[int, object] = {}

    async def insert(key: int, *rows: int) -> None:
        try:
            results[key] = await held_writer.insert(*rows)
        except ConflictError as error:
            results[key] = error

    async with anyio.create_task_group() as group:
        group.start_soon(held_writer.hold)
        await held_writer.started()
        for key, rows in enumerate([(1,), (2,), (3,), (5, 2), (4,)]):  # 2 again: a conflict
            group.start_soon(insert, key, *rows)
        await held_writer.queued(5)
        commits = held_writer.commits
        held_writer.release()
    assert held_writer.commits == commits + 2  # the holder's, then the queue's in one
    assert [results[k] for k in (0, 1, 2, 4)] == [1, 2, 3, 4]
    assert isinstance(results[3], ConflictError)
    assert await held_writer.rows() == [1, 2, 3, 4]  # none of the failed write's rows
    assert held_writer.store.runner.writes_waiting == 0


async def test_sqlite_reads_queued_for_a_thread_run_together(held_writer: _HeldWriter) -> None:
    """With every thread busy, the reads that queue meanwhile run in one transaction when a
    thread comes free; each caller gets its own answer, and a read that fails fails alone."""
    await held_writer.insert(1)
    answers: dict[int, object] = {}

    async def read(key: int) -> None:
        def rows(conn: Connection) -> list[int]:
            if key == 2:
                raise LookupError("this read fails")
            return [r[0] for r in conn.exec_driver_sql("SELECT id FROM scratch")]

        try:
            answers[key] = await held_writer.store.runner.read(rows)
        except LookupError as error:
            answers[key] = error

    async with anyio.create_task_group() as group:
        for holders in range(1, _engine.SQLITE_CONNECTIONS + 1):  # one thread each
            group.start_soon(partial(held_writer.hold, read=True))
            await held_writer.started(holders)
        for key in range(4):
            group.start_soon(read, key)
        await held_writer.queued(4, reads=True)
        commits = held_writer.commits
        held_writer.release()
    assert held_writer.commits == commits + _engine.SQLITE_CONNECTIONS + 1  # the four in one
    assert [answers[k] for k in (0, 1, 3)] == [[1], [1], [1]]
    assert isinstance(answers[2], LookupError)
    assert held_writer.store.runner.reads_waiting == 0


class _ThreadAborted(BaseException):
    """Not an Exception: escapes the batch's own error handling, as nothing should."""


async def test_callers_of_a_batch_that_never_finished_are_told_not_left_waiting(
        held_writer: _HeldWriter) -> None:
    answers: dict[str, BaseException] = {}

    async def read(name: str) -> None:
        def aborts(_conn: Connection) -> None:
            if name == "aborts":
                raise _ThreadAborted

        try:
            await held_writer.store.runner.read(aborts)
        except (_ThreadAborted, StoreError) as error:
            answers[name] = error

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            for holders in range(1, _engine.SQLITE_CONNECTIONS + 1):
                group.start_soon(partial(held_writer.hold, read=True))
                await held_writer.started(holders)
            group.start_soon(read, "aborts")
            await held_writer.queued(1, reads=True)
            group.start_soon(read, "with it")
            await held_writer.queued(2, reads=True)
            held_writer.release()
    assert isinstance(answers["aborts"], _ThreadAborted)
    assert isinstance(answers["with it"], StoreError)
    assert "did not run" in str(answers["with it"])


async def test_a_queued_write_whose_caller_gave_up_is_not_written(
        held_writer: _HeldWriter) -> None:
    async with anyio.create_task_group() as group:
        group.start_soon(held_writer.hold)
        await held_writer.started()
        with anyio.move_on_after(0.2):
            await held_writer.insert(1)
        assert held_writer.store.runner.writes_waiting == 0
        group.start_soon(held_writer.insert, 2)
        await held_writer.queued(1)
        held_writer.release()
    assert await held_writer.rows() == [2]


@pytest.mark.parametrize(("url", "driver"), [
    ("sqlite:///x.db", "sqlite+pysqlite"),
    ("postgresql://postgres@127.0.0.1:5432/db", "postgresql+asyncpg"),
    ("postgresql+psycopg://postgres@127.0.0.1:5432/db", "postgresql+psycopg"),
    ("postgresql+psycopg_async://postgres@h/db", "postgresql+psycopg_async"),
    ("sqlite+aiosqlite:///x.db", "sqlite+aiosqlite"),
])
def test_default_drivers_and_explicit_ones_honoured(url: str, driver: str) -> None:
    assert _engine.resolve_url(url).drivername == driver


@pytest.mark.parametrize(("url", "message"), [
    ("mysql://root@localhost/db", r"scheme 'mysql' is not supported"),
    ("postgresql://user@host:notaport/db", r"malformed"),
    ("not a url", r"malformed"),
    ("sqlite://", r"needs a database file"),
    ("sqlite:///:memory:", r"needs a database file"),
])
def test_unusable_url_is_a_clear_error(url: str, message: str) -> None:
    with pytest.raises(StoreError, match=message):
        _engine.resolve_url(url)


def test_a_driver_that_is_not_installed_is_a_clear_error() -> None:
    with pytest.raises(StoreError, match=r"'postgresql\+pg8000' is not installed.*asyncpg"):
        SqlStore("postgresql+pg8000://postgres@127.0.0.1:5432/test")


def test_plugin_registers_the_store_without_importing_sqlalchemy() -> None:
    settings = PluginSettings(plugins=("store_sql",))
    spec = get_plugin_manager(settings).store_for_url("postgresql+asyncpg://h/db")
    assert spec.name == "sql" and spec.factory is not None
    assert isinstance(spec.factory("sqlite:///unused.db"), SqlStore)
    probe = ("import sys, remote_store_sql; "
             "print(any(m.startswith(('sqlalchemy', 'alembic')) for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.slow
class TestOtherDrivers(StoreContract):
    """The whole contract again on the drivers an explicit URL can select."""

    pytestmark = [pytest.mark.anyio, pytest.mark.slow]

    @pytest.fixture(params=["postgresql+psycopg", "postgresql+psycopg_async"])
    def database(self, request: pytest.FixtureRequest,
                 scratch: Callable[[str], Database]) -> Database:
        driver = str(request.param)
        return scratch(driver.split("+", 1)[0]).with_driver(driver)


@pytest.mark.anyio
async def test_a_flood_of_readiness_pings_costs_postgresql_one_connection(
        postgres_scratch: Database) -> None:
    """``/readyz`` is public: the ping's own connection (outside the pool) is opened by
    one probe at a time, and the callers that waited for it share its answer."""
    store = SqlStore(postgres_scratch.url)
    await store.open()
    opened: list[object] = []
    try:
        probe = store._runner._probe
        assert isinstance(probe, AsyncEngine)
        event.listen(probe.sync_engine, "connect", lambda *_: opened.append(1))
        async with anyio.create_task_group() as group:
            for _ in range(50):
                group.start_soon(store.ping)
        assert len(opened) == 1
        assert await store.ping() and len(opened) == 2  # a caller after it: a fresh look
    finally:
        await store.close()


def _in_a_transaction_block(conn: Connection) -> bool:
    """Whether two statements in a row share one transaction (a BEGIN's)."""
    conn.exec_driver_sql("SELECT pg_current_xact_id()")  # the first one's, made now
    return conn.exec_driver_sql("SELECT pg_current_xact_id_if_assigned()").scalar() is not None


@pytest.mark.parametrize("driver", ["postgresql", "postgresql+psycopg",
                                    "postgresql+psycopg_async"])
async def test_postgresql_reads_need_no_begin_and_commit(
        driver: str, scratch: Callable[[str], Database]) -> None:
    """Two round trips fewer a read: under READ COMMITTED each statement has a snapshot
    of its own whether or not a transaction block holds it. Writes keep theirs."""
    store = SqlStore(scratch("postgresql").with_driver(driver).url)
    await store.open()
    try:
        assert await store.runner.read(_in_a_transaction_block) is False
        assert await store.runner.write(_in_a_transaction_block) is True
        assert await store.runner.read(_in_a_transaction_block) is False  # reset for reads
        assert await store.runner.write(_in_a_transaction_block) is True  # and back
    finally:
        await store.close()

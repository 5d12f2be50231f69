"""``SqlAdmin``: backups, restores and copies on real SQLite files and PostgreSQL databases.

The end-to-end tests (``tests/deploy/test_backups.py``) run these through the
command line against live servers; these hold the refusals and edge cases.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from remote_store_sql import make_admin
from remote_store_sql.store import SqlStore
from remote_store_sql.testing import all_rows, postgres_database, sqlite_database

from remote_core.errors import StoreError
from remote_core.records import AuditEvent, MachineReport


async def filled(url: str) -> None:
    """A machine, a key and an audit event (the table with a sequence)."""
    store = SqlStore(url)
    await store.open()
    try:
        await store.upsert_machine(MachineReport(agent_id="m-1", hostname="kept"))
        await store.add_agent_key("m-1", "ab" * 32, "k")
        await store.add_event(AuditEvent(kind="session.started", agent_id="m-1",
                                         created_at=datetime.now(UTC)))
    finally:
        await store.close()


@pytest.mark.anyio
async def test_sqlite_backup_refusals_and_restore(tmp_path: Path) -> None:
    url = sqlite_database(tmp_path).url
    admin = make_admin(url)
    with pytest.raises(StoreError, match="no remote-support schema"):
        admin.backup(tmp_path / "empty.backup")
    await filled(url)
    admin.backup(tmp_path / "one.backup")
    with pytest.raises(StoreError, match="exists"):
        admin.backup(tmp_path / "one.backup")
    assert not (tmp_path / "one.backup-wal").exists(), "the backup is one file"
    with pytest.raises(StoreError, match=r"holds data .*machines.*--force"):
        admin.restore(tmp_path / "one.backup")
    fresh = sqlite_database(tmp_path, "fresh.db").url
    make_admin(fresh).restore(tmp_path / "one.backup")
    assert all_rows(fresh) == all_rows(url)
    (tmp_path / "junk").write_text("not a database")
    with pytest.raises(StoreError, match="not a SQLite backup"):
        admin.restore(tmp_path / "junk", force=True)


@pytest.mark.postgres
def test_postgres_backup_names_a_missing_client(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with postgres_database("admin_tool") as database:
        anyio.run(filled, database.url)
        monkeypatch.setenv("PATH", str(tmp_path))  # a host without the PostgreSQL client
        with pytest.raises(StoreError, match=r"pg_dump is not installed.*postgresql-client"):
            make_admin(database.url).backup(tmp_path / "dump")
        assert not list(tmp_path.iterdir()), "no partial file is left"


@pytest.mark.anyio
@pytest.mark.postgres
async def test_copy_to_postgresql_keeps_rows_and_sequences(tmp_path: Path) -> None:
    source = sqlite_database(tmp_path).url
    await filled(source)
    with postgres_database("admin_copy") as target:
        said: list[str] = []
        copied = dict(make_admin(source).copy_to(target.url, said.append))
        assert copied["machines"] == 1 and copied["session_events"] == 1
        assert said[-1].startswith("verified row counts and primary keys")
        assert all_rows(target.url) == all_rows(source)
        await filled_again(target.url)  # the copied event's id is not handed out again
        with pytest.raises(StoreError, match="holds data"):
            make_admin(source).copy_to(target.url, said.append)
        with pytest.raises(StoreError, match="PostgreSQL URL"):
            make_admin(source).copy_to(sqlite_database(tmp_path, "x.db").url, said.append)


async def filled_again(url: str) -> None:
    store = SqlStore(url)
    await store.open()
    try:
        await store.add_event(AuditEvent(kind="session.ended", agent_id="m-1",
                                         created_at=datetime.now(UTC)))
        assert len(await store.list_events(agent_id="m-1")) == 2
    finally:
        await store.close()


@pytest.mark.postgres
def test_a_postgres_archive_from_a_newer_release_is_refused(tmp_path: Path) -> None:
    with postgres_database("admin_newer") as source, postgres_database("admin_into") as into:
        anyio.run(filled, source.url)
        source.execute("UPDATE alembic_version SET version_num = '9999_future'")
        make_admin(source.url).backup(tmp_path / "dump")
        with pytest.raises(StoreError, match="'9999_future', newer than this release knows"):
            make_admin(into.url).restore(tmp_path / "dump", force=True)
        assert into.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'") == [
            (0,)], "nothing was touched"

"""Migrations: empty to head, a second run changes nothing, every earlier revision
upgrades cleanly, the models match the migrations, and concurrent openers
(threads of one process and separate ``remote-support migrate`` processes) are safe."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import anyio
import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from remote_store_sql import _migrate
from remote_store_sql._schema import metadata
from remote_store_sql.store import SqlStore
from remote_store_sql.testing import Database
from sqlalchemy.engine import Connection

from remote_core.errors import StoreError
from remote_core.records import DEFAULT_TENANT_ID, MachineFilter

pytestmark = pytest.mark.anyio


def snapshot(conn: Connection) -> dict[str, Any]:
    """Everything a migration could change: tables, columns, keys, indexes, revision, seeds."""
    inspector = sa.inspect(conn)
    tables: dict[str, Any] = {}
    for table in sorted(inspector.get_table_names()):
        tables[table] = {
            "columns": [(c["name"], str(c["type"]), c["nullable"], str(c.get("default")))
                        for c in inspector.get_columns(table)],
            "pk": inspector.get_pk_constraint(table)["constrained_columns"],
            "fks": sorted((tuple(fk["constrained_columns"]), fk["referred_table"])
                          for fk in inspector.get_foreign_keys(table)),
            "indexes": sorted((i["name"] or "", tuple(i["column_names"]), bool(i["unique"]))
                              for i in inspector.get_indexes(table)),
            "unique": sorted(tuple(u["column_names"])
                             for u in inspector.get_unique_constraints(table)),
        }
    return {
        "tables": tables,
        "revision": _migrate.current_revision(conn),
        "tenants": conn.execute(sa.text("SELECT id, name FROM tenants")).all(),
    }


async def take_snapshot(store: SqlStore) -> dict[str, Any]:
    return await store.runner.read(snapshot)


async def test_empty_database_upgrades_to_head(empty: Database) -> None:
    store = SqlStore(empty.url)
    try:
        await store.open()
        state = await take_snapshot(store)
    finally:
        await store.close()
    assert state["revision"] == _migrate.head_revision()
    assert set(state["tables"]) == set(metadata.tables) | {"alembic_version"}
    assert state["tenants"] == [(DEFAULT_TENANT_ID, "default")]


async def test_second_run_changes_nothing(empty: Database) -> None:
    first = SqlStore(empty.url)
    await first.open()
    await first.create_machine("m-1", "acme")
    before = await take_snapshot(first)
    await first.close()

    second = SqlStore(empty.url)
    try:
        await second.open()
        await second.open()
        assert await take_snapshot(second) == before
        assert [m.agent_id for m in await second.list_machines()] == ["m-1"]
    finally:
        await second.close()


@pytest.mark.parametrize("start", ["base", *_migrate.revisions()[:-1]])
async def test_each_earlier_revision_upgrades_cleanly(
        empty: Database, start: str,
        make_empty: Callable[[], AbstractContextManager[Database]]) -> None:
    """A database left at ``start`` reaches the same schema as one built straight to head."""
    old = SqlStore(empty.url)
    try:
        await old.runner.write(_migrate.upgrade, start)
        assert await old.runner.read(_migrate.current_revision) == (
            None if start == "base" else start)
        if start != "base":
            empty.execute("INSERT INTO machines (agent_id, machine_uid, organization) "
                          "VALUES ('kept', 'uid-kept', 'acme')")
        await old.open()
        upgraded = await take_snapshot(old)
        if start != "base":
            kept = await old.get_machine("kept")
            assert kept is not None
            assert (kept.machine_uid, kept.organization) == ("uid-kept", "acme")
    finally:
        await old.close()

    with make_empty() as fresh:
        reference = SqlStore(fresh.url)
        try:
            await reference.open()
            assert upgraded == await take_snapshot(reference)
        finally:
            await reference.close()
    assert upgraded["revision"] == _migrate.head_revision()


ROWS_WITHOUT_TENANT = (
    "INSERT INTO machines (agent_id, organization) VALUES ('old-pc', 'acme')",
    "INSERT INTO agent_keys (id, agent_id, key_hash) VALUES ('k-1', 'old-pc', '{}')"
    .format("a" * 64),
    "INSERT INTO support_codes (code, expires_at) VALUES ('ABC-DEF-GHJ', "
    "'2030-01-01 00:00:00')",
    "INSERT INTO sessions (id, agent_id) VALUES ('s-1', 'old-pc')",
    "INSERT INTO users (id, username, password_hash, role) VALUES ('u-1', 'tess', 'h', "
    "'technician')",
    "INSERT INTO user_permissions (user_id, permission) VALUES ('u-1', 'view')",
    "INSERT INTO user_client_access (user_id, organization) VALUES ('u-1', 'acme')",
    "INSERT INTO releases (version, download_url, checksum_sha256) VALUES ('1.0.0', "
    "'https://example.test/a', '{}')".format("b" * 64),
    "INSERT INTO session_events (kind, session_id) VALUES ('session.opened', 's-1')",
)


async def test_rows_stored_without_a_tenant_move_into_the_default_tenant(
        empty: Database) -> None:
    """Revision 0013: every row a release before tenants stored (tenant_id NULL) is the
    default tenant's afterwards, none lost, and the tenant's lists show it."""
    store = SqlStore(empty.url)
    try:
        await store.runner.write(_migrate.upgrade, "0012")
        for statement in ROWS_WITHOUT_TENANT:
            empty.execute(statement)
        tables = [statement.split()[2] for statement in ROWS_WITHOUT_TENANT]
        await store.open()  # upgrades to head

        def tenants_of(conn: Connection) -> dict[str, list[Any]]:
            return {table: [row[0] for row in conn.execute(
                sa.text(f"SELECT tenant_id FROM {table}"))]
                for table in tables}

        assert await store.runner.read(tenants_of) == {
            table: [DEFAULT_TENANT_ID] for table in tables}
        assert [m.agent_id for m in await store.list_machines(
            MachineFilter(tenant_id=DEFAULT_TENANT_ID))] == ["old-pc"]
        assert [u.username for u in await store.list_users(tenant_id=DEFAULT_TENANT_ID)
                ] == ["tess"]
        user = await store.get_user("u-1")
        assert user is not None and (user.permissions, user.client_access) == (
            ("view",), ("acme",))
    finally:
        await store.close()


async def test_models_match_migrations(empty: Database) -> None:
    """``_schema`` (what queries assume) describes exactly what the migrations build."""
    store = SqlStore(empty.url)

    def differences(conn: Connection) -> list[Any]:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        return list(compare_metadata(context, metadata))

    try:
        await store.open()
        assert await store.runner.read(differences) == []
    finally:
        await store.close()


async def test_concurrent_opens_in_one_process(empty: Database) -> None:
    stores = [SqlStore(empty.url) for _ in range(4)]
    try:
        async with anyio.create_task_group() as tg:
            for store in stores:
                tg.start_soon(store.open)
        assert await stores[0].runner.read(_migrate.current_revision) == (
            _migrate.head_revision())
        tenants = await stores[0].runner.read(
            lambda conn: conn.execute(sa.text("SELECT count(*) FROM tenants")).scalar_one())
        assert tenants == 1
    finally:
        for store in stores:
            await store.close()


def migrate_command(url: str) -> subprocess.Popen[str]:
    env = {**os.environ, "REMOTE_SUPPORT_PLUGINS": "store_sql"}
    return subprocess.Popen(
        [sys.executable, "-m", "remote_server.cli", "migrate", "--database-url", url],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


@pytest.mark.slow
async def test_migrate_command_in_parallel_processes_then_again(empty: Database) -> None:
    """``remote-support migrate`` from three processes at once, then once more: all succeed,
    the schema is built once, and the last run changes nothing."""
    runs = [migrate_command(empty.url) for _ in range(3)]
    outputs = [(run.communicate(timeout=60)[0], run.returncode) for run in runs]
    for output, code in outputs:
        assert code == 0, output
        assert "is at the newest schema" in output
    store = SqlStore(empty.url)
    try:
        before = await take_snapshot(store)
        assert before["revision"] == _migrate.head_revision()
        assert before["tenants"] == [(DEFAULT_TENANT_ID, "default")]
        again = migrate_command(empty.url)
        output = again.communicate(timeout=60)[0]
        assert again.returncode == 0 and "is at the newest schema" in output
        assert "Running upgrade" not in output
        assert await take_snapshot(store) == before
    finally:
        await store.close()


def test_migrate_command_reports_a_bad_url_clearly(tmp_path: Path) -> None:
    run = migrate_command(f"sqlite:///{tmp_path / 'missing-dir' / 'x.db'}")
    output = run.communicate(timeout=60)[0]
    assert run.returncode != 0
    assert "Traceback" not in output
    assert "unable to open database file" in output


async def test_a_database_from_a_newer_release_is_refused_clearly(empty: Database) -> None:
    store = SqlStore(empty.url)
    try:
        await store.open()
        empty.execute("UPDATE alembic_version SET version_num = '9999'")
        with pytest.raises(StoreError, match=r"at revision '9999'.*knows up to"):
            await store.open()
    finally:
        await store.close()

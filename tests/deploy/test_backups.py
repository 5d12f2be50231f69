"""Backups, restores and the move to PostgreSQL, on real servers with a real agent.

A ``remote-support serve`` process (as the README starts it) gets rows in every
table the API writes: users with permissions and client access, a support code,
a machine with a key and a live agent (its session and audit events), a release,
login addresses, TOTP, a passkey and a passkey challenge. ``remote-support backup``
then runs while it serves; the restore must give back every row exactly.
``migrate-db`` copies a running SQLite server into PostgreSQL, and the server
restarted there takes back its agent, whose key still admits it, and its operators,
whose passwords still work.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from remote_server.testing.processes import BIN, AgentProcess, Api, ServerProcess
from remote_server.testing.softkey import SoftAuthenticator
from remote_server.web import totp
from remote_store_sql import make_store
from remote_store_sql.testing import all_rows, postgres_database, require_postgres
from remote_viewer.client import open_viewer

from remote_core.records import utcnow
from remote_core.testing.browser import wait_until
from remote_core.testing.xvfb import shared_xvfb

pytestmark = [pytest.mark.slow, pytest.mark.xvfb]

OPERATOR = ("kept", "kept-password-0123")
ENROLLED = ("second", "second-password-0123")  # has TOTP and recovery codes
KEYED = ("keyed", "keyed-password-0123")  # has a passkey, and a challenge unanswered
ATTEMPTS = 5
WEBHOOK = "https://10.20.30.40/hook"


def cli(server: ServerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    """``remote-support ARGS`` with the server's own settings (its database)."""
    return subprocess.run([str(BIN / "remote-support"), *args], env=server.env, text=True,
                          capture_output=True, timeout=120, check=False)


@contextmanager
def running(server: ServerProcess) -> Iterator[ServerProcess]:
    # A webhook target on a private address: every event is refused and logged, so the
    # delivery log holds rows too (no request leaves the machine).
    server.env.update({"REMOTE_SUPPORT_PLUGIN_WEBHOOKS_URL": WEBHOOK,
                       "REMOTE_SUPPORT_PLUGIN_WEBHOOKS_SECRET": "backup-test-secret-0123"})
    server.start()
    try:
        yield server
    finally:
        server.stop()


def populate(server: ServerProcess, home: Path) -> tuple[str, AgentProcess]:
    """Rows in every table the API writes, and a connected agent; its machine's id."""
    with closing(Api(server)) as api:
        r = api.post("/api/users", json={"username": OPERATOR[0], "password": OPERATOR[1],
                                         "permissions": ["view"], "client_access": ["acme"]})
        assert r.status_code == 201, r.text
        r = api.post("/api/users", json={"username": ENROLLED[0], "password": ENROLLED[1]})
        assert r.status_code == 201, r.text
        enrol_totp(server.url, *ENROLLED)
        r = api.post("/api/users", json={"username": KEYED[0], "password": KEYED[1]})
        assert r.status_code == 201, r.text
        enrol_passkey(server, *KEYED)
        api.support_code()
        r = api.post("/api/releases", json={
            "version": "9.9.9", "download_url": "https://updates.example/remote-agent.pyz",
            "checksum_sha256": "ab" * 32})
        assert r.status_code == 201, r.text
        agent_id, key = api.machine_with_key(organization="acme", tags=["kept"])
        agent = AgentProcess(home, shared_xvfb().display, "--server", server.url, "--key", key)
        session_id = api.live_session(agent_id, within=60)["id"]
        watch(server, api.viewer_token(session_id))  # a recording (the server records)
        wait_until(lambda: api.events(session_id, "recording.finished"), timeout=30,
                   what="the recording's end")
        deadline = time.monotonic() + 30
        while not api.get("/api/webhooks/deliveries").json():
            assert time.monotonic() < deadline, "no webhook delivery was logged"
            time.sleep(0.2)
    login(server.url, *OPERATOR)
    beat_as_a_cluster_node(server.env["REMOTE_SUPPORT_DATABASE_URL"])
    return agent_id, agent


def beat_as_a_cluster_node(url: str) -> None:
    """The one table no single server writes: the beats of a cluster's nodes."""
    async def beat() -> None:
        store = make_store(url)
        await store.open()
        try:
            await store.beat_node("node-a", True, utcnow())
        finally:
            await store.close()

    anyio.run(beat)


def watch(server: ServerProcess, token: str) -> None:
    """A technician looks at the session until its first picture, then leaves."""
    async def look() -> None:
        async with open_viewer(server.url, token) as viewer:
            await viewer.wait_for_image(lambda _image: True, within=30)

    anyio.run(look)


def enrol_totp(url: str, username: str, password: str) -> None:
    """A second factor, with recovery codes, for ``username``."""
    r = httpx.post(f"{url}/api/auth/login", json={"username": username, "password": password})
    assert r.status_code == 200, r.text
    headers = {"Authorization": f"Bearer {r.json()['access_token']}"}
    secret = httpx.post(f"{url}/api/auth/totp/secret", headers=headers).json()["secret"]
    r = httpx.post(f"{url}/api/auth/totp", headers=headers,
                   json={"secret": secret, "code": totp.totp(secret)})
    assert r.status_code == 201, r.text


def enrol_passkey(server: ServerProcess, username: str, password: str) -> None:
    """A passkey for ``username``, and a registration challenge left unanswered (the
    server is named ``localhost``: WebAuthn refuses addresses)."""
    with httpx.Client(base_url=server.url, headers={"Host": f"localhost:{server.port}"},
                      timeout=30) as client:
        r = client.post("/api/auth/login", json={"username": username, "password": password})
        assert r.status_code == 200, r.text
        client.headers["Authorization"] = f"Bearer {r.json()['access_token']}"
        options = client.post("/api/auth/passkeys/options").json()["options"]
        key = SoftAuthenticator(f"http://localhost:{server.port}")
        r = client.post("/api/auth/passkeys", json={"name": "key",
                                                    "credential": key.create(options)})
        assert r.status_code == 201, r.text
        client.headers["Authorization"] = f"Bearer {r.json()['access_token']}"
        assert client.post("/api/auth/passkeys/options").status_code == 200


def login(url: str, username: str, password: str) -> None:
    r = httpx.post(f"{url}/api/auth/login", json={"username": username, "password": password})
    assert r.status_code == 200, r.text


def consistent_backup(server: ServerProcess, url: str, file: Path
                      ) -> dict[str, list[tuple[Any, ...]]]:
    """Back up the live server; the rows it held, read unchanged before and after the
    backup (the agent's heartbeats write now and then: then the backup is taken again)."""
    for _ in range(ATTEMPTS):
        file.unlink(missing_ok=True)
        before = all_rows(url)
        done = cli(server, "backup", str(file))
        assert done.returncode == 0, done.stderr
        if all_rows(url) == before:
            assert file.stat().st_mode & 0o077 == 0, "a backup holds secrets: owner only"
            return before
    raise AssertionError("the live server wrote during every backup")


def every_table_holds_rows(rows: dict[str, list[tuple[Any, ...]]]) -> None:
    empty = {name for name, held in rows.items() if not held}
    assert not empty, f"tables without rows: {empty}"


def backup_and_restore(server: ServerProcess, url: str, tmp_path: Path) -> None:
    with running(server):
        _agent_id, agent = populate(server, tmp_path / "agent")
        try:
            held = consistent_backup(server, url, tmp_path / "backup")
        finally:
            agent.stop()
    every_table_holds_rows(held)
    refused = cli(server, "restore", str(tmp_path / "backup"))
    assert refused.returncode == 2
    assert "holds data" in refused.stderr and "--force" in refused.stderr
    assert "Traceback" not in refused.stderr
    done = cli(server, "restore", "--force", str(tmp_path / "backup"))
    assert done.returncode == 0, done.stderr
    assert all_rows(url) == held
    with running(server):
        login(server.url, *OPERATOR)


def test_backup_and_restore_of_a_live_server_on_sqlite(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "server", recordings="on")
    backup_and_restore(server, server.env["REMOTE_SUPPORT_DATABASE_URL"], tmp_path)


@pytest.mark.postgres
def test_backup_and_restore_of_a_live_server_on_postgresql(tmp_path: Path) -> None:
    with postgres_database("backup") as database:
        server = ServerProcess(tmp_path / "server", database_url=database.url,
                               recordings="on")
        backup_and_restore(server, database.url, tmp_path)


def test_a_backup_from_a_newer_release_is_refused(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "server")
    assert cli(server, "migrate").returncode == 0
    assert cli(server, "backup", str(tmp_path / "backup")).returncode == 0
    import sqlite3

    with sqlite3.connect(tmp_path / "backup") as conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999_future'")
    conn.close()
    refused = cli(server, "restore", "--force", str(tmp_path / "backup"))
    assert refused.returncode == 2
    assert "newer than this release knows" in refused.stderr
    assert "Traceback" not in refused.stderr


@pytest.mark.postgres
def test_migrate_db_moves_a_running_sqlite_server_to_postgresql(tmp_path: Path) -> None:
    require_postgres()
    first = ServerProcess(tmp_path / "server", recordings="on")
    sqlite_url = first.env["REMOTE_SUPPORT_DATABASE_URL"]
    with running(first):
        agent_id, agent = populate(first, tmp_path / "agent")
        try:
            with moved(first, sqlite_url) as (target, held):
                every_table_holds_rows(held)
                again = cli(first, "migrate-db", "--to", target)
                assert again.returncode == 2 and "holds data" in again.stderr
                first.stop()
                second = ServerProcess(tmp_path / "pg", database_url=target)
                second.port = first.port  # the agent knows the old address only
                second.env["REMOTE_SUPPORT_PORT"] = str(first.port)
                with running(second), closing(Api(second)) as api:
                    session = api.live_session(agent_id, within=90)
                    assert session["agent_id"] == agent_id, "its key still admits the agent"
                    login(second.url, *OPERATOR)
                    assert api.machine(agent_id)["organization"] == "acme"  # type: ignore[index]
        finally:
            agent.stop()


@contextmanager
def moved(server: ServerProcess, source: str
          ) -> Iterator[tuple[str, dict[str, list[tuple[Any, ...]]]]]:
    """``migrate-db`` from the live server into a new PostgreSQL database, taken again
    into another new one when the server wrote meanwhile; the target and the rows."""
    for _ in range(ATTEMPTS):
        with postgres_database("migrated") as database:
            before = all_rows(source)
            done = cli(server, "migrate-db", "--to", database.url)
            assert done.returncode == 0, done.stderr
            assert "verified row counts and primary keys" in done.stdout
            if all_rows(source) == before:
                assert all_rows(database.url) == before
                yield database.url, before
                return
    raise AssertionError("the live server wrote during every copy")


def test_migrate_db_refuses_bad_targets_in_one_line(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "server")
    assert cli(server, "migrate").returncode == 0
    for target, said in [("mysql://root:hunter2@127.0.0.1/db", "must be a PostgreSQL URL"),
                         ("postgresql://u:hunter2@127.0.0.1:1/db", "cannot reach")]:
        done = cli(server, "migrate-db", "--to", target)
        assert done.returncode == 2, done.stderr
        errors = [line for line in done.stderr.splitlines() if "error" in line]
        assert len(errors) == 1 and said in errors[0], done.stderr
        assert "hunter2" not in done.stdout + done.stderr
        assert "Traceback" not in done.stderr

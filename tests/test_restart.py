"""Machines, keys and users survive a restart of a real ``remote-support serve`` process."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from websockets.sync.client import connect

from remote_core.protocol import pb, wrap
from remote_core.testing.services import POSTGRES_ADMIN_URL, require_service, unique_name

STARTED = re.compile(r"listening on http://127\.0\.0\.1:(\d+)")
PASSWORD = re.compile(r"created user 'admin' with password (\S+)")


class Served:
    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.stdout: list[str] = []
        self.port = 0
        self._ready = threading.Event()
        threading.Thread(target=self._read, args=(proc.stdout,), daemon=True).start()
        threading.Thread(target=self._read, args=(proc.stderr,), daemon=True).start()

    def _read(self, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            self.stdout.append(line)
            if match := STARTED.search(line):
                self.port = int(match.group(1))
                self._ready.set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self) -> None:
        if not self._ready.wait(60):
            raise AssertionError("server did not start:\n" + "".join(self.stdout))

    def printed_password(self) -> str | None:
        found = [m.group(1) for line in self.stdout if (m := PASSWORD.search(line))]
        assert len(found) <= 1
        return found[0] if found else None


@contextmanager
def serve(database_url: str) -> Iterator[Served]:
    exe = shutil.which("remote-support")
    assert exe
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMOTE_SUPPORT_")}
    proc = subprocess.Popen([exe, "serve", "--port", "0", "--database-url", database_url],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    served = Served(proc)
    try:
        served.wait_ready()
        yield served
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    # uvicorn re-raises SIGTERM after a graceful shutdown, so the exit status is -SIGTERM.
    assert proc.returncode in (0, -signal.SIGTERM), "".join(served.stdout)
    assert any("Application shutdown complete" in line for line in served.stdout)


def login(url: str, username: str, password: str) -> httpx.Client:
    r = httpx.post(f"{url}/api/auth/login", json={"username": username, "password": password})
    assert r.status_code == 200, r.text
    return httpx.Client(base_url=url, headers={
        "Authorization": f"Bearer {r.json()['access_token']}"})


def agent_accepted(url: str, key: str) -> bool:
    with connect(url.replace("http://", "ws://") + "/ws/agent", open_timeout=10) as ws:
        ws.send(wrap("session_request", pb.SessionRequest(
            agent_id=str(uuid.uuid4()), session_token=key, client_version="1.0.0")))
        while True:
            message = pb.Message()
            message.ParseFromString(ws.recv(timeout=10))
            if message.WhichOneof("payload") == "session_response":
                return bool(message.session_response.success)


def restart_keeps_everything(database_url: str) -> None:
    with serve(database_url) as first:
        password = first.printed_password()
        assert password, "a generated first-admin password is printed once"
        admin = login(first.url, "admin", password)
        r = admin.post("/api/users", json={"username": "kept", "password": "kept-password",
                                           "permissions": ["view"]})
        assert r.status_code == 201
        agent_id = admin.post("/api/machines", json={"organization": "keep"}).json()["agent_id"]
        key = admin.post(f"/api/machines/{agent_id}/keys", json={"label": "k"}).json()
        assert agent_accepted(first.url, key["key"])
    with serve(database_url) as second:
        assert second.printed_password() is None, "shown only on the first start"
        admin = login(second.url, "admin", password)
        assert "kept" in {u["username"] for u in admin.get("/api/users").json()}
        login(second.url, "kept", "kept-password")
        assert admin.get(f"/api/machines/{agent_id}").json()["organization"] == "keep"
        assert [k["id"] for k in admin.get(f"/api/machines/{agent_id}/keys").json()] == [key["id"]]
        assert agent_accepted(second.url, key["key"]), "the key still admits its agent"


@pytest.mark.slow
def test_restart_on_sqlite(tmp_path: Path) -> None:
    restart_keeps_everything(f"sqlite:///{tmp_path / 'restart.db'}")


@pytest.mark.slow
def test_restart_on_postgresql() -> None:
    require_service("PostgreSQL", "127.0.0.1", 5432)
    import psycopg

    name = unique_name("restart")
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        restart_keeps_everything(POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}")
    finally:
        with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

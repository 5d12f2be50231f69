"""``remote-support user`` and ``migrate`` on a real database, then the API sees the result."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from remote_server.testing.deviations import test_settings
from remote_server.testing.liveserver import ApiClient, live_server


def cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    exe = shutil.which("remote-support")
    assert exe
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMOTE_SUPPORT_")}
    return subprocess.run([exe, *args], input=stdin, capture_output=True, text=True,
                          timeout=120, env=env)


@pytest.mark.slow
def test_users_made_on_the_command_line_can_log_in(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    assert cli("migrate", "--database-url", url).returncode == 0
    made = cli("user", "--database-url", url, "create", "opal", "--permission", "view",
               stdin="opal-password\n")
    assert made.returncode == 0, made.stderr
    short = cli("user", "--database-url", url, "create", "tiny", stdin="short\n")
    assert short.returncode == 2 and "at least 8 characters" in short.stderr
    listed = cli("user", "--database-url", url, "list")
    assert "opal" in listed.stdout and "tiny" not in listed.stdout
    settings = test_settings(database_url=url, admin_password="admin-password-cli")
    with live_server(settings) as server:
        opal = ApiClient(server).login("opal", "opal-password")
        me = opal.get("/api/auth/me").json()
        assert me["role"] == "technician" and me["permissions"] == ["view"]
        users = ApiClient(server).post("/api/auth/login", json={
            "username": "admin", "password": "admin-password-cli"})
        assert users.status_code == 401, "users exist, so no first admin was created"

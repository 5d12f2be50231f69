"""An authentication plugin from outside the project, installed as its own distribution.

``examples/auth_tokenfile`` is built and installed the way a packager would
(``uv pip install --target``), and a real ``remote-support serve`` loads it by
name with ``auth_agentkey`` blocked: a real agent (the agent's own session and
reconnect loop) authenticates through it, key issuance answers a clear 501
problem instead of minting a key nothing accepts, and nothing answers 500.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from remote_agent.fleet import Fleet
from remote_server.testing.processes import Api, ServerProcess

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "auth_tokenfile"
PLUGINS = "store_sql,auth_supportcode,auth_tokenfile,codec_raw_zstd,web_console"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example distribution built from its source and installed into a directory."""
    target = tmp_path_factory.mktemp("third-party") / "site-packages"
    uv = shutil.which("uv")
    assert uv, "uv is on PATH under scripts/test"
    subprocess.run([uv, "pip", "install", "--quiet", "--no-deps", "--python", sys.executable,
                    "--target", str(target), str(EXAMPLE)], check=True, timeout=300)
    assert (target / "remote_auth_tokenfile" / "__init__.py").exists()
    return target


@pytest.fixture
def server(tmp_path: Path, installed: Path) -> Iterator[tuple[ServerProcess, Path]]:
    tokens = tmp_path / "enrolment-tokens.json"
    tokens.write_text("{}")
    process = ServerProcess(tmp_path / "server", plugins=PLUGINS,
                            block_plugins="auth_agentkey")
    process.env |= {"PYTHONPATH": str(installed),
                    "REMOTE_SUPPORT_PLUGIN_AUTH_TOKENFILE_FILE": str(tokens)}
    process.start()
    try:
        yield process, tokens
    finally:
        process.stop()


async def online(api: Api, agent_id: str, within: float = 30.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        machine = api.machine(agent_id)
        if machine is not None and machine["status"] == "online":
            return True
        await anyio.sleep(0.2)
    return False


async def test_agents_authenticate_through_a_plugin_from_elsewhere(
        server: tuple[ServerProcess, Path]) -> None:
    process, tokens = server
    api = Api(process)
    agent_id = api.post("/api/machines", json={"organization": "acme"}).json()["agent_id"]
    tokens.write_text(json.dumps({"enrol_3f9a1c": agent_id}))
    enrolled = Fleet(process.url, "enrol_3f9a1c", 1, agent_ids=[agent_id])
    stranger = Fleet(process.url, "enrol_not-listed", 1)
    async with anyio.create_task_group() as group:
        group.start_soon(enrolled.run)
        group.start_soon(stranger.run)
        assert await online(api, agent_id), process.log.read_text()[-3000:]
        await anyio.sleep(1)
        group.cancel_scope.cancel()
    assert stranger.online() == 0 and not any(a.connections for a in stranger.agents)
    events = api.get("/api/events", params={"limit": 100}).json()
    failed = [e for e in events if e["kind"] == "agent.auth_failed"]
    assert failed and "unknown enrolment token" in failed[0]["detail"]["error"]

    # No loaded method issues keys: a clear problem, never a key nothing would accept.
    r = api.post(f"/api/machines/{agent_id}/keys", json={"label": "laptop"})
    assert r.status_code == 501 and r.headers["content-type"].startswith(
        "application/problem+json")
    assert "no loaded authentication method issues agent keys" in r.json()["detail"]
    assert "tokenfile" in r.json()["detail"]
    assert api.get(f"/api/machines/{agent_id}/keys").json() == []

    log = process.log.read_text()
    assert "Traceback" not in log and '" 500' not in log


def test_the_plugin_list_says_what_is_loaded_and_what_is_blocked(
        server: tuple[ServerProcess, Path]) -> None:
    process, _ = server
    out = subprocess.run([str(Path(sys.executable).parent / "remote-support"), "plugins"],
                         env={**os.environ, **{k: v for k, v in process.env.items()
                                               if k.startswith(("REMOTE_", "PYTHONPATH"))}},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "auth_tokenfile     remote-auth-tokenfile 1.0.0" in out.stdout
    assert "auth_agentkey      blocked (REMOTE_SUPPORT_BLOCK_PLUGINS)" in out.stdout
    assert httpx.get(f"{process.url}/readyz", timeout=5).status_code == 200

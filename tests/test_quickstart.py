"""The README's two quick-start commands, run as a new user runs them.

Each runs in a fresh clone of this repository with an empty ``HOME`` and
``PATH=/usr/local/bin:/usr/bin:/bin``: Debian's own ``python3`` (which refuses
``pip install`` outside a venv, PEP 668), no ``uv``, nothing left by an
earlier run; the rest of the machine's environment is kept, as a new user's
shell has it. Only the download caches are shared (uv's and pip's, named by
their own variables), so a run costs seconds, not a fresh download; the
packages in them are the ones the lock file names either way.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from remote_server.testing.processes import free_port

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
FRESH_PATH = "/usr/local/bin:/usr/bin:/bin"


def _cache_dirs() -> dict[str, str]:
    """uv's and pip's caches of the machine running the suite (downloads only)."""
    uv = shutil.which("uv")
    assert uv, "the suite runs under uv (scripts/test puts it on PATH)"
    uv_cache = subprocess.run([uv, "cache", "dir"], capture_output=True, text=True,
                              check=True).stdout.strip()
    pip_cache = os.environ.get("PIP_CACHE_DIR") or str(Path.home() / ".cache" / "pip")
    return {"UV_CACHE_DIR": uv_cache, "PIP_CACHE_DIR": pip_cache}


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """A fresh clone of the committed tree, and the environment of a new user."""
    where = tmp_path_factory.mktemp("quickstart")
    repo = where / "remote-support"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(repo)],
                   check=True)
    home = where / "home"
    home.mkdir()
    # The machine's own settings (its CA bundle, package mirrors) stay; what this
    # suite's environment adds (the venv, uv, the tools on PATH) goes.
    inherited = {k: v for k, v in os.environ.items()
                 if not k.startswith(("UV_", "VIRTUAL_ENV", "PYTHON", "REMOTE_SUPPORT_"))}
    env = {**inherited, "HOME": str(home), "PATH": FRESH_PATH, **_cache_dirs()}
    yield repo, env


def test_the_tree_starts_without_uv_or_a_venv(clone: tuple[Path, dict[str, str]]) -> None:
    repo, env = clone
    assert not (repo / ".venv").exists() and not (repo / ".tools").exists()
    found = subprocess.run(["sh", "-c", "command -v uv; command -v python3"], env=env,
                           capture_output=True, text=True)
    assert found.stdout.strip() == "/usr/bin/python3", found.stdout


def test_scripts_serve_sets_up_and_serves_the_embedded_default(
        clone: tuple[Path, dict[str, str]]) -> None:
    repo, env = clone
    port = free_port()
    log = repo / "serve.log"
    with log.open("wb") as out:
        server = subprocess.Popen(["scripts/serve", "--port", str(port)], cwd=repo, env=env,
                                  stdout=out, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            assert server.poll() is None, log.read_text()
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        else:
            pytest.fail("scripts/serve did not answer in 10 minutes:\n" + log.read_text())
        shown = re.search(r"created user 'admin' with password (\S+)", log.read_text())
        assert shown, log.read_text()
        login = httpx.post(f"http://127.0.0.1:{port}/api/auth/login", timeout=10,
                           json={"username": "admin", "password": shown.group(1)})
        assert login.status_code == 200, login.text
        assert list(repo.glob("*.db")), "the embedded SQLite file is in the working directory"
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # as a service manager stops it
        server.wait(30)
    assert "Application shutdown complete" in log.read_text(), log.read_text()


def test_scripts_test_sets_up_and_runs_the_suite(clone: tuple[Path, dict[str, str]]) -> None:
    # The whole suite is what CI runs; here one small module proves the command
    # works from nothing (set-up, ruff, mypy, then pytest with the arguments given).
    repo, env = clone
    run = subprocess.run(["scripts/test", "tests/test_settings.py", "-q", "-p",
                          "no:cacheprovider"], cwd=repo, env=env, capture_output=True,
                         text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert re.search(r"\d+ passed", run.stdout), run.stdout[-2000:]

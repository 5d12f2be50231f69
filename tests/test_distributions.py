"""The distributions carry what their layer imports, and no more (read from uv.lock).

An agent install must not pull the server's web stack or a database driver;
serving the browser console must not need PyAV or numpy; every plugin names
the range of the core it was built for.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SERVER_STACK = {"starlette", "uvicorn", "pydantic", "sqlalchemy", "argon2-cffi", "pyjwt",
                "asyncpg", "psycopg", "psycopg-binary"}


def tree(package: str) -> set[str]:
    """Every distribution ``package`` pulls in, by the committed lock file."""
    uv = shutil.which("uv")
    assert uv, "uv is on PATH under scripts/test"
    out = subprocess.run([uv, "tree", "--package", package, "--frozen", "--no-dev"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    pulled: set[str] = set()
    skip_below: int | None = None  # an optional extra's subtree is not installed by default
    for line in out.splitlines():
        found = re.search(r"([A-Za-z0-9_.-]+) v\d", line)
        if not found:
            continue
        depth = found.start()
        if skip_below is not None and depth > skip_below:
            continue
        skip_below = depth if "(extra:" in line else None
        if skip_below is None:
            pulled.add(found.group(1).lower())
    return pulled


def test_the_agent_installs_no_server_stack() -> None:
    pulled = tree("remote-agent")
    assert "remote-core" in pulled and "remote-codec-raw-zstd" in pulled
    assert pulled.isdisjoint(SERVER_STACK | {"remote-support"}), pulled & SERVER_STACK


def test_the_console_needs_no_codec() -> None:
    pulled = tree("remote-web-console")
    assert "starlette" in pulled
    assert pulled.isdisjoint({"av", "numpy", "remote-codec-pyav", "remote-viewer"}), pulled


def test_the_core_is_small() -> None:
    direct = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.split(r"[<>=;\[ ]", d)[0] for d in direct}
    assert names == {"protobuf", "pluggy", "anyio", "wsproto", "packaging"}
    assert tree("remote-core").isdisjoint(SERVER_STACK | {"av", "numpy"})


DISTRIBUTIONS = [*sorted(ROOT.glob("plugins/*/pyproject.toml")), ROOT / "agent" / "pyproject.toml",
                 ROOT / "viewer" / "pyproject.toml", ROOT / "server" / "pyproject.toml"]


@pytest.mark.parametrize("pyproject", DISTRIBUTIONS, ids=lambda p: p.parent.name)
def test_every_distribution_names_the_core_range_it_supports(pyproject: Path) -> None:
    project = tomllib.loads(pyproject.read_text())["project"]
    core = [d for d in project["dependencies"] if re.match(r"remote-core\b", d)]
    assert core == ["remote-core>=0.1,<0.2"], project["dependencies"]

"""The distributions carry what their layer imports, and no more (read from uv.lock).

An agent install must not pull the server's web stack or a database driver, nor
PyAV unless its ``video`` extra is asked for; a server pulls no codec; serving
the browser console must not need PyAV or numpy; SQLite needs no PostgreSQL
driver. Every distribution names the range of its siblings it was built for,
and ships the license, a README and the ``py.typed`` marker.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

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


def test_a_raw_only_agent_pulls_no_pyav_and_no_numpy() -> None:
    pulled = tree("remote-agent")
    assert pulled.isdisjoint({"av", "numpy", "remote-codec-pyav"}), pulled


def test_each_video_codec_ships_without_the_others() -> None:
    for codec in ("h264", "h265", "vp9"):
        pulled = tree(f"remote-codec-{codec}")
        assert {"remote-codec-pyav", "av"} <= pulled, pulled
        others = {f"remote-codec-{c}" for c in ("h264", "h265", "vp9") if c != codec}
        assert pulled.isdisjoint(others), pulled


def test_the_server_pulls_no_codec_capture_or_input() -> None:
    pulled = tree("remote-support")
    assert not {p for p in pulled if p.startswith(("remote-codec", "remote-capture",
                                                   "remote-input"))}, pulled
    assert pulled.isdisjoint({"av", "numpy", "zstandard", "mss", "pynput"}), pulled


def test_sqlite_needs_no_postgresql_driver() -> None:
    pulled = tree("remote-store-sql")
    assert "sqlalchemy" in pulled
    assert pulled.isdisjoint({"asyncpg", "psycopg", "psycopg-binary"}), pulled
    extras = _project(ROOT / "plugins" / "store_sql" / "pyproject.toml")["optional-dependencies"]
    assert {re.split(r"[<>=\[]", d)[0] for d in extras["postgres"]} == {"asyncpg", "psycopg"}


def test_the_console_needs_no_codec() -> None:
    pulled = tree("remote-web-console")
    assert "starlette" in pulled
    assert pulled.isdisjoint({"av", "numpy", "remote-codec-pyav", "remote-viewer"}), pulled


def test_the_core_is_small() -> None:
    direct = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.split(r"[<>=;\[ ]", d)[0] for d in direct}
    assert names == {"protobuf", "pluggy", "anyio", "websockets", "packaging"}
    assert tree("remote-core").isdisjoint(SERVER_STACK | {"av", "numpy"})


DISTRIBUTIONS = [*sorted(ROOT.glob("plugins/*/pyproject.toml")), ROOT / "agent" / "pyproject.toml",
                 ROOT / "viewer" / "pyproject.toml", ROOT / "server" / "pyproject.toml"]


@pytest.mark.parametrize("pyproject", DISTRIBUTIONS, ids=lambda p: p.parent.name)
def test_every_distribution_names_the_core_range_it_supports(pyproject: Path) -> None:
    project = tomllib.loads(pyproject.read_text())["project"]
    core = [d for d in project["dependencies"] if re.match(r"remote-core\b", d)]
    assert core == ["remote-core>=0.1,<0.2"], project["dependencies"]


def _project(pyproject: Path) -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads(pyproject.read_text())["project"]
    return project


def _requirements(project: dict[str, Any]) -> list[str]:
    extras = project.get("optional-dependencies", {}).values()
    return [*project["dependencies"], *(d for group in extras for d in group)]


@pytest.mark.parametrize("pyproject", [ROOT / "pyproject.toml", *DISTRIBUTIONS],
                         ids=lambda p: p.parent.name if p.parent != ROOT else "core")
def test_every_sibling_requirement_names_a_compatible_range(pyproject: Path) -> None:
    siblings = [d for d in _requirements(_project(pyproject)) if d.startswith("remote-")]
    unpinned = [d for d in siblings if not re.search(r">=0\.1,<0\.2$", d)]
    assert not unpinned, f"{pyproject}: {unpinned}"


@pytest.mark.parametrize("pyproject", [ROOT / "pyproject.toml", *DISTRIBUTIONS],
                         ids=lambda p: p.parent.name if p.parent != ROOT else "core")
def test_every_distribution_ships_license_readme_and_types(pyproject: Path) -> None:
    here = pyproject.parent
    project = _project(pyproject)
    assert project["license"] == "MIT"
    assert (here / "LICENSE").read_text() == (ROOT / "LICENSE").read_text()
    assert project["readme"] == "README.md" and (here / "README.md").is_file()
    packages = tomllib.loads(pyproject.read_text())["tool"]["hatch"]["build"]["targets"][
        "wheel"]["packages"]
    for package in packages:
        assert (here / package / "py.typed").is_file(), f"{package} has no py.typed"


@pytest.mark.parametrize(("pyproject", "needs"), [
    (ROOT / "pyproject.toml", {"pytest", "numpy", "trustme"}),
    (ROOT / "plugins" / "store_sql" / "pyproject.toml", {"remote-core", "psycopg"}),
], ids=["remote_core.testing", "remote_store_sql.testing"])
def test_the_contract_suites_are_a_testing_extra(pyproject: Path, needs: set[str]) -> None:
    testing = _project(pyproject)["optional-dependencies"]["testing"]
    assert needs <= {re.split(r"[<>=\[;]", d)[0] for d in testing}

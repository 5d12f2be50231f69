"""Every distribution built from a clean checkout, installed from its wheels alone.

As a packager does it: ``uv build --all-packages`` in a fresh clone (each wheel
built from its sdist, so every sdist is shown to rebuild its wheel), then a
minimal server set and a minimal (raw-only) agent set, each into a fresh
``python3 -m venv`` of Debian's own Python. The project's distributions come
from the built wheels only (named by path, so a same-named project on PyPI can
never stand in); third-party ones from PyPI through pip's cache, shared with
the machine as in the quick-start test. Then an agent from the one environment
streams through a server from the other to a viewer, pixel exact, and each
environment is checked for what it must not carry.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from remote_server.testing.processes import AgentProcess, Api, ServerProcess
from remote_viewer.client import open_viewer

from remote_core.protocol import pb
from remote_core.testing.xvfb import Painter, shared_xvfb

pytestmark = [pytest.mark.slow, pytest.mark.xvfb]

ROOT = Path(__file__).resolve().parents[1]
DISTRIBUTIONS = 21  # the core, the server, the agent, the viewer, 16 plugins and the PyAV library
SERVER_SET = ("remote-support", "remote-store-sql", "remote-auth-agentkey",
              "remote-auth-supportcode")
AGENT_SET = ("remote-agent",)  # raw-only: its video codecs are the `video` extra
NOT_ON_AN_AGENT = {"starlette", "uvicorn", "pydantic", "sqlalchemy", "argon2-cffi", "pyjwt",
                   "asyncpg", "psycopg", "av", "numpy", "remote-codec-pyav", "remote-support"}
NOT_ON_A_SERVER = {"av", "numpy", "zstandard", "mss", "pynput", "asyncpg", "psycopg"}


def _clean_env() -> dict[str, str]:
    """The machine's environment without the suite's venv (pip's cache is kept)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("UV_", "VIRTUAL_ENV", "PYTHON", "PIP_", "REMOTE_"))}
    env["PIP_CACHE_DIR"] = os.environ.get("PIP_CACHE_DIR") or str(
        Path.home() / ".cache" / "pip")
    return env


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every wheel and sdist of a fresh clone of the committed tree."""
    where = tmp_path_factory.mktemp("wheels")
    repo = where / "remote-support"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(repo)],
                   check=True)
    uv = shutil.which("uv")
    assert uv, "uv is on PATH under scripts/test"
    subprocess.run([uv, "build", "--all-packages", "--quiet", "-o", str(where / "dist")],
                   cwd=repo, check=True, timeout=600)
    return where / "dist"


def _wheel(dist: Path, name: str) -> Path:
    found = sorted(dist.glob(f"{name.replace('-', '_')}-*.whl"))
    assert len(found) == 1, f"{name}: {found}"
    return found[0]


def _venv(where: Path, dist: Path, names: tuple[str, ...]) -> Path:
    """A fresh venv of the system Python holding ``names`` from the wheels in ``dist``."""
    env = _clean_env()
    subprocess.run(["/usr/bin/python3", "-m", "venv", str(where)], check=True, env=env)
    subprocess.run([str(where / "bin" / "python"), "-m", "pip", "install", "--quiet",
                    "--disable-pip-version-check", "--find-links", str(dist),
                    *(str(_wheel(dist, name)) for name in names)],
                   check=True, env=env, timeout=900)
    return where


def installed(venv: Path) -> dict[str, str]:
    """Every distribution in ``venv``, by normalised name, with its version."""
    out = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "list", "--format=json",
                          "--disable-pip-version-check"], capture_output=True, text=True,
                         check=True, env=_clean_env()).stdout
    return {item["name"].lower().replace("_", "-"): item["version"] for item in json.loads(out)}


@pytest.fixture(scope="module")
def server_env(wheels: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _venv(tmp_path_factory.mktemp("server-env") / "venv", wheels, SERVER_SET)


@pytest.fixture(scope="module")
def agent_env(wheels: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _venv(tmp_path_factory.mktemp("agent-env") / "venv", wheels, AGENT_SET)


def test_every_distribution_builds_a_wheel_and_an_sdist(wheels: Path) -> None:
    assert len(list(wheels.glob("*.whl"))) == DISTRIBUTIONS
    assert len(list(wheels.glob("*.tar.gz"))) == DISTRIBUTIONS


def test_the_agent_environment_holds_no_server_stack_and_no_video(agent_env: Path) -> None:
    held = installed(agent_env)
    assert {"remote-agent", "remote-codec-raw-zstd", "remote-capture-mss",
            "remote-input-pynput"} <= set(held), held
    assert not NOT_ON_AN_AGENT & set(held), NOT_ON_AN_AGENT & set(held)


def test_the_server_environment_holds_no_codec_capture_or_input(server_env: Path) -> None:
    held = installed(server_env)
    assert set(SERVER_SET) <= set(held), held
    assert not NOT_ON_A_SERVER & set(held), NOT_ON_A_SERVER & set(held)
    assert not [name for name in held if name.startswith(("remote-codec", "remote-capture",
                                                          "remote-input"))], held


@pytest.fixture
def from_wheels(tmp_path: Path, server_env: Path,
                agent_env: Path) -> Iterator[tuple[ServerProcess, Api, str, Painter]]:
    """A server and a keyed agent, each running from its own wheel-built environment."""
    display = shared_xvfb(800, 600)
    painter = Painter(display.display)
    painter.fill(0, 0, painter.width, painter.height, 0x000000)
    painter.sync()
    server = ServerProcess(tmp_path / "server")
    server.bin_dir = server_env / "bin"
    server.start()
    api = Api(server)
    agent_id, key = api.machine_with_key()
    agent = AgentProcess(tmp_path / "agent", display.display, "--server", server.url,
                         "--key", key, bin_dir=agent_env / "bin")
    try:
        session = api.live_session(agent_id, within=30)
        yield server, api, session["id"], painter
    finally:
        agent.stop()
        api.close()
        server.stop()
        painter.close()


@pytest.mark.anyio
async def test_an_agent_streams_through_a_server_to_a_viewer_from_wheels_alone(
        from_wheels: tuple[ServerProcess, Api, str, Painter]) -> None:
    server, api, session_id, painter = from_wheels
    pattern = np.random.default_rng(24).integers(0, 256, (48, 80, 4), dtype=np.uint8)
    async with open_viewer(server.url, api.viewer_token(session_id),
                           codec=pb.CODEC_RAW) as viewer:
        first = await viewer.next_frame(15)
        assert first.image.shape == (600, 800, 4)
        painter.put_bgra(120, 90, 80, 48, pattern.tobytes())
        painter.sync()
        frame = await viewer.wait_for_image(
            lambda image: np.array_equal(image[90:138, 120:200, :3], pattern[:, :, :3]), 15)
        assert frame.codec == "raw"

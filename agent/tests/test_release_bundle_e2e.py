"""The self-contained release on a machine with nothing but its own python3, updated in place.

Two releases are built from the project's wheels with ``remote-support release
build --wheels``: 1.0.0, and 1.0.1 whose consent plugin is a newer build. The
first runs with an empty ``HOME`` and ``PATH=/usr/local/bin:/usr/bin:/bin``,
outside the suite's virtual environment (Debian's ``python3`` through the
file's ``#!`` line), comes online, is pushed the signed 1.0.1 from an HTTPS
host, and restarts into it: the whole file, plugins included, was replaced.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
import zipfile
from pathlib import Path

import pytest
from remote_agent.config import AgentConfig
from remote_server.cli import main as remote_support
from remote_server.release import generate_keypair, sha256_file, sign_file
from remote_server.testing.processes import Api, stop_process

from remote_core.testing.release_server import ReleaseServer, Route

pytestmark = [pytest.mark.xvfb, pytest.mark.slow, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
FRESH_PATH = "/usr/local/bin:/usr/bin:/bin"
CHANGED = "remote-consent-dialog"


def _uv() -> str:
    uv = shutil.which("uv")
    assert uv, "uv is on PATH under scripts/test"
    return uv


def _changed_plugin(where: Path) -> Path:
    """The consent plugin's wheel again, as its next version (0.1.1)."""
    source = where / "consent_dialog"
    shutil.copytree(ROOT / "plugins" / "consent_dialog", source,
                    ignore=shutil.ignore_patterns("__pycache__", "tests"))
    pyproject = source / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('version = "0.1.0"',
                                                       'version = "0.1.1"', 1))
    subprocess.run([_uv(), "build", "--wheel", "--quiet", "-o", str(where / "out"),
                    str(source)], check=True, timeout=300)
    return next((where / "out").glob("*.whl"))


@pytest.fixture(scope="module")
def releases_built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    where = tmp_path_factory.mktemp("release")
    first = where / "wheels-1.0.0"
    subprocess.run([_uv(), "build", "--all-packages", "--quiet", "-o", str(first)], cwd=ROOT,
                   check=True, timeout=600)
    second = where / "wheels-1.0.1"
    shutil.copytree(first, second)
    for old in second.glob("remote_consent_dialog-*"):
        old.unlink()
    shutil.copy(_changed_plugin(where / "changed"), second)
    built = {}
    for version, wheels in (("1.0.0", first), ("1.0.1", second)):
        target = where / "out" / f"remote-agent-{version}.pyz"
        assert remote_support(["release", "build", "--wheels", str(wheels), "--version",
                               version, "--output", str(target)]) == 0
        built[version] = target
    return built


def test_the_release_holds_its_plugins_and_no_server_or_test_code(
        releases_built: dict[str, Path]) -> None:
    names = zipfile.ZipFile(releases_built["1.0.0"]).namelist()
    assert "__main__.py" in names
    tops = {n.split("/")[1] for n in names if n.startswith("site/")}
    assert {"remote_agent", "remote_core", "remote_codec_raw_zstd", "remote_capture_mss",
            "remote_input_pynput", "remote_consent_dialog", "zstandard"} <= tops
    assert not tops & {"remote_server", "starlette", "uvicorn", "sqlalchemy", "av", "numpy",
                       "remote_codec_pyav", "remote_store_sql", "remote_web_console"}
    assert not [n for n in names if n.startswith("site/remote_core/testing/")]
    assert "site/remote_agent-1.0.0.dist-info/METADATA" in names


def test_equal_wheels_make_equal_releases(releases_built: dict[str, Path],
                                          tmp_path: Path) -> None:
    wheels = releases_built["1.0.0"].parents[1] / "wheels-1.0.0"
    again = tmp_path / "again.pyz"
    assert remote_support(["release", "build", "--wheels", str(wheels), "--version", "1.0.0",
                           "--output", str(again)]) == 0
    assert again.read_bytes() == releases_built["1.0.0"].read_bytes()


def test_a_failed_build_leaves_no_partial_file(tmp_path: Path) -> None:
    target = tmp_path / "out" / "remote-agent.pyz"
    assert remote_support(["release", "build", "--wheels", str(tmp_path), "--output",
                           str(target)]) == 2
    assert not target.exists() and not list(tmp_path.glob("out/.*"))


def test_install_from_the_release_registers_that_release(
        releases_built: dict[str, Path], tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    artifact = tmp_path / "opt" / "remote-agent.pyz"
    artifact.parent.mkdir()
    shutil.copy(releases_built["1.0.0"], artifact)
    env = {"HOME": str(home), "PATH": FRESH_PATH, "LANG": "C.UTF-8"}
    run = subprocess.run([str(artifact), "install", "--server", "http://127.0.0.1:9",
                          "--key", "cak_" + "x" * 40], env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert "will not apply updates" not in run.stderr
    entry = (home / ".config" / "autostart" / "remote-agent.desktop").read_text()
    assert f"Exec=/usr/bin/python3 {artifact} --config " in entry, entry


def _online(api: Api, agent_id: str, version: str) -> bool:
    machine = api.machine(agent_id)
    return bool(machine and machine["status"] == "online"
                and machine["agent_version"] == version)


def _reported_plugins(api: Api, agent_id: str) -> list[str]:
    """The plugin set the agent reported, as operators read it from the REST API."""
    machine = api.machine(agent_id)
    return list(machine["plugins"]) if machine else []


def _wait(what: str, predicate, log: Path, within: float = 60.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what} did not happen; agent log:\n"
                         + log.read_text(errors="replace")[-4000:])


def _plugin_lines(log: Path) -> list[str]:
    return re.findall(r"plugins loaded: (.*)", log.read_text(errors="replace"))


def test_the_release_runs_without_the_venv_and_updates_its_plugins(
        tmp_path: Path, releases_built: dict[str, Path], x_display, server, api) -> None:
    key_file = tmp_path / "publisher.pem"
    public = generate_keypair(key_file)
    home = tmp_path / "home"  # empty: the machine holds nothing of the agent's
    home.mkdir()
    machine = tmp_path / "machine"
    artifact = machine / "remote-agent.pyz"
    machine.mkdir()
    shutil.copy(releases_built["1.0.0"], artifact)
    with ReleaseServer(tmp_path / "host") as host:
        config = machine / "agent.toml"
        AgentConfig(ca_bundle=str(host.ca_bundle), update_public_key=public).save(config)
        agent_id, key = api.machine_with_key()
        env = {"HOME": str(home), "PATH": FRESH_PATH, "DISPLAY": x_display.display,
               "LANG": "C.UTF-8"}
        log = tmp_path / "agent.log"
        with log.open("ab") as out:
            process = subprocess.Popen([str(artifact), "--config", str(config), "--server",
                                        server.url, "--key", key], env=env, stdout=out,
                                       stderr=out, cwd=machine)
        try:
            _wait("1.0.0 online", lambda: _online(api, agent_id, "1.0.0"), log)
            assert "consent_dialog 0.1.0" in _plugin_lines(log)[-1]
            _wait("the plugin set reported", lambda: "consent_dialog 0.1.0" in
                  _reported_plugins(api, agent_id), log)
            new = releases_built["1.0.1"]
            sign_file(new, key_file)
            url = host.publish("remote-agent-1.0.1.pyz", Route(new.read_bytes()))
            host.publish("remote-agent-1.0.1.pyz.sig",
                         Route(new.with_name(new.name + ".sig").read_bytes()))
            r = api.post("/api/releases", json={"version": "1.0.1", "download_url": url,
                                                "checksum_sha256": sha256_file(new)})
            assert r.status_code == 201, r.text
            r = api.post(f"/api/machines/{agent_id}/update", json={"version": "1.0.1"})
            assert r.status_code == 202, r.text
            _wait("1.0.1 online", lambda: _online(api, agent_id, "1.0.1"), log)
            _wait("the new plugin set", lambda: "consent_dialog 0.1.1" in _plugin_lines(log)[-1],
                  log)
            _wait("the new plugin set reported", lambda: "consent_dialog 0.1.1" in
                  _reported_plugins(api, agent_id), log)
            assert "consent_dialog 0.1.0" not in _reported_plugins(api, agent_id)
            assert process.poll() is None  # the same process, replaced in place (exec)
        finally:
            stop_process(process)
    assert artifact.read_bytes() == releases_built["1.0.1"].read_bytes()
    previous = machine / "remote-agent.pyz.previous"
    assert previous.read_bytes() == releases_built["1.0.0"].read_bytes()
    assert sorted(p.name for p in machine.iterdir()) == [
        ".remote-agent.pyz.d", "agent.toml", "remote-agent.pyz", "remote-agent.pyz.previous"]
    assert len(list((machine / ".remote-agent.pyz.d").iterdir())) == 2  # this build, rollback

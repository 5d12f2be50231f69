"""The systemd units: ``deploy/systemd/`` and the one ``remote-agent install`` writes.

``systemd-analyze verify`` (Debian package ``systemd``) parses each unit as
systemd would and names every unknown key, bad value or missing program; the
units must pass it without a single line. Their commands point at this
checkout's programs for the check (the shipped paths are an install's).
"""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from remote_agent.install import HARDENING, startup_command, user_unit
from remote_server.settings import ServerSettings
from remote_server.testing.tls_terminator import DEPLOY, shipped

from remote_core.testing.services import unavailable

SERVER_UNIT = "systemd/remote-support.service"
AGENT_UNIT = "systemd/remote-agent.service"
SERVER_HARDENING = ("NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes",
                    "PrivateTmp=yes", "PrivateDevices=yes", "CapabilityBoundingSet=")


def verify(unit: Path, *, user: bool) -> None:
    """``systemd-analyze verify`` says nothing at all about ``unit``."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        unavailable("systemd-analyze is missing (Debian package systemd, installed by "
                    "scripts/bootstrap)")
    runtime = unit.parent / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    command = [analyze, *(["--user"] if user else []), "verify", "--man=no", str(unit)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False,
                          env={"PATH": "/usr/bin:/bin", "XDG_RUNTIME_DIR": str(runtime),
                               "HOME": str(unit.parent)})
    assert done.returncode == 0 and not (done.stdout + done.stderr).strip(), \
        f"{unit.name}:\n{done.stdout}{done.stderr}"


def service_lines(text: str) -> list[str]:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    assert set(parser.sections()) == {"Unit", "Service", "Install"}
    return [line.strip() for line in text.split("[Service]", 1)[1].split("[Install]")[0]
            .splitlines() if line.strip() and not line.startswith("#")]


def test_the_server_unit_verifies_and_is_hardened(tmp_path: Path) -> None:
    program = Path(sys.executable).parent / "remote-support"
    unit = tmp_path / "remote-support.service"
    unit.write_text(shipped(SERVER_UNIT, {"/opt/remote-support/bin/remote-support":
                                          str(program)}))
    lines = service_lines(unit.read_text())
    assert all(option in lines for option in SERVER_HARDENING), lines
    assert "ExecReload=/bin/kill -HUP $MAINPID" in lines  # the certificate reload
    verify(unit, user=False)


def test_the_unit_install_writes_verifies_and_carries_the_hardening(tmp_path: Path) -> None:
    text = user_unit(startup_command(tmp_path / "agent.toml"))
    lines = service_lines(text)
    assert all(option in lines for option in HARDENING)
    # What the agent's job needs stays open: its display's socket and its home.
    assert not any(line.startswith(("ProtectSystem", "ProtectHome", "PrivateTmp"))
                   for line in lines)
    unit = tmp_path / "remote-agent.service"
    unit.write_text(text)
    verify(unit, user=True)


def test_the_shipped_agent_unit_matches_what_install_writes(tmp_path: Path) -> None:
    shipped_text = (DEPLOY / AGENT_UNIT).read_text()
    written = user_unit(["/usr/bin/python3", "/opt/remote-agent/remote-agent.pyz"])
    assert [line for line in service_lines(shipped_text) if not line.startswith("ExecStart")] \
        == [line for line in service_lines(written) if not line.startswith("ExecStart")]
    pyz = tmp_path / "remote-agent.pyz"
    pyz.write_bytes(b"")
    unit = tmp_path / "remote-agent.service"
    unit.write_text(shipped(AGENT_UNIT, {"/usr/bin/python3 /opt/remote-agent/remote-agent.pyz":
                                         f"{sys.executable} {pyz}"}))
    verify(unit, user=True)


@pytest.mark.parametrize("name", [SERVER_UNIT, AGENT_UNIT])
def test_a_unit_names_no_setting_the_program_lacks(name: str) -> None:
    """Every REMOTE_SUPPORT_* the unit's comments mention is a real setting."""
    known = {f"REMOTE_SUPPORT_{f.upper()}" for f in ServerSettings.__dataclass_fields__}
    named = set(re.findall(r"REMOTE_SUPPORT_[A-Z_]+[A-Z]", (DEPLOY / name).read_text()))
    assert named <= known, named - known

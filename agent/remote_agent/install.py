"""Start-up registration for the current user: what ``install`` creates, ``uninstall`` removes.

On Linux the agent is started with the graphical session (an XDG autostart
entry, since capture needs the user's display) and, where a systemd user
manager runs, also by a user unit that restarts it if it dies. Everything
created is listed in a manifest beside the config, so uninstall removes
exactly that and nothing else.

Start-up runs what ``install`` itself ran from: the release build's file when
installed from one, so a self-update, which replaces that file, is what the
next start runs; the source package otherwise, which cannot update itself
(:func:`updates_apply` says which).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

from .config import AgentConfig
from .update_files import running_artifact

__all__ = ["HARDENING", "install", "manifest_path", "startup_command", "uninstall",
           "updates_apply", "user_unit"]

log = logging.getLogger(__name__)

UNIT_NAME = "remote-agent.service"


def manifest_path(config_path: Path) -> Path:
    return config_path.with_name("installed.json")


def _config_home() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


def updates_apply() -> bool:
    """Whether an agent started the way :func:`startup_command` says can update itself."""
    return running_artifact() is not None


def startup_command(config_path: Path) -> list[str]:
    """The agent as start-up runs it: this interpreter and the build running now.

    Self-update replaces the release build's file in place, so start-up must
    run that file; ``-m remote_agent`` would run the source package beside it.
    """
    artifact = running_artifact()
    program = [str(artifact)] if artifact is not None else ["-m", "remote_agent"]
    return [sys.executable, *program, "--config", str(config_path.absolute())]


_DESKTOP_RESERVED = set(" \t\n\"'\\><~|&;$*?#()`")


def _desktop_exec(argv: list[str]) -> str:
    """``argv`` as a desktop entry's ``Exec`` value (Desktop Entry Specification 1.5).

    Arguments with reserved characters are double-quoted with ``"`$\\`` escaped,
    ``%`` is doubled (field codes), then the string-value escapes apply on top.
    """
    words = []
    for arg in argv:
        if arg and not _DESKTOP_RESERVED & set(arg):
            words.append(arg)
        else:
            words.append('"' + "".join("\\" + c if c in '"`$\\' else c for c in arg) + '"')
    line = " ".join(words).replace("%", "%%")
    return line.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")


def _systemd_exec(argv: list[str]) -> str:
    """``argv`` as a systemd ``ExecStart=`` value (systemd.syntax(7) quoting).

    Each word is double-quoted with C escapes; ``%`` (specifiers) and ``$``
    (environment expansion) are doubled so they stay literal.
    """
    escapes = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "%": "%%", "$": "$$"}
    return " ".join('"' + "".join(escapes.get(c, c) for c in arg) + '"' for arg in argv)


HARDENING = (
    "NoNewPrivileges=yes",
    "LockPersonality=yes",
    "RestrictRealtime=yes",
    "RestrictSUIDSGID=yes",
    "RestrictNamespaces=yes",
    "SystemCallArchitectures=native",
    "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK",
    "UMask=0077",
)
"""What the agent's user unit forbids: privilege gain, namespaces, foreign system calls,
sockets other than the display's (AF_UNIX), the server's and the interfaces' (netlink).

What its job needs is left alone, so no mount namespace (``ProtectSystem``,
``ProtectHome``, ``PrivateTmp``): the display's socket is in ``/tmp/.X11-unix``,
input goes through it, self-update rewrites the release file and the agent its
own config in the user's home, and in a user unit those options need unprivileged
user namespaces that many systems switch off. ``MemoryDenyWriteExecute`` is left
out as well: codec libraries may generate code at run time."""


def user_unit(command: list[str]) -> str:
    """The systemd user unit ``install`` writes for ``command``."""
    return ("[Unit]\nDescription=Remote support agent\nAfter=graphical-session.target\n\n"
            f"[Service]\nExecStart={_systemd_exec(command)}\nRestart=on-failure\n"
            "RestartSec=5\n" + "".join(f"{line}\n" for line in HARDENING) +
            "\n[Install]\nWantedBy=graphical-session.target\n")


def _systemd_user_available() -> bool:
    if shutil.which("systemctl") is None:
        return False
    probe = subprocess.run(["systemctl", "--user", "is-system-running"], capture_output=True,
                           text=True, check=False, timeout=10)
    return probe.stdout.strip() not in {"", "offline"}


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def install(config: AgentConfig, config_path: Path) -> list[Path]:
    """Save ``config`` and register start-up; return the files created."""
    if not config.server or not config.key:
        raise ValueError("install needs --server and --key")
    config = config.with_identity(config_path)
    config.save(config_path)  # install is where the key is meant to be kept
    command = startup_command(config_path)
    created = [_write(_config_home() / "autostart" / "remote-agent.desktop", (
        "[Desktop Entry]\nType=Application\nName=Remote support agent\n"
        f"Exec={_desktop_exec(command)}\nX-GNOME-Autostart-enabled=true\nNoDisplay=true\n"))]
    enabled = False
    if sys.platform.startswith("linux") and _systemd_user_available():
        unit = _write(_config_home() / "systemd" / "user" / UNIT_NAME, user_unit(command))
        created.append(unit)
        done = subprocess.run(["systemctl", "--user", "enable", UNIT_NAME], check=False,
                              capture_output=True, timeout=30)
        enabled = done.returncode == 0
    manifest = {"files": [str(p) for p in created], "systemd_unit": enabled}
    manifest_path(config_path).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return created


def uninstall(config_path: Path) -> list[Path]:
    """Remove the start-up registration and the config; return what was removed."""
    removed: list[Path] = []
    manifest_file = manifest_path(config_path)
    try:
        manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        manifest = {"files": [], "systemd_unit": False}
    if manifest.get("systemd_unit") and shutil.which("systemctl"):
        subprocess.run(["systemctl", "--user", "disable", UNIT_NAME], check=False,
                       capture_output=True, timeout=30)
    for name in [*manifest.get("files", []), str(config_path), str(manifest_file)]:
        path = Path(name)
        try:
            path.unlink()
            removed.append(path)
        except FileNotFoundError:
            continue
    try:
        config_path.parent.rmdir()  # only when nothing else lives there
    except OSError:
        log.debug("config directory %s kept: not empty", config_path.parent)
    return removed

"""The agent's config file and identity (CONTRACT 5).

``agent_id`` is created once, at the first run or install, and kept in the
file; ``machine_uid`` comes from the platform. The file may hold an agent key,
so it is written readable by its owner only.
"""

from __future__ import annotations

import json
import os
import sys
import tomllib
import uuid
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

__all__ = ["AgentConfig", "default_config_path", "machine_uid"]


def default_config_path() -> Path:
    """``$XDG_CONFIG_HOME/remote-agent/agent.toml`` (``~/.config`` when unset)."""
    if sys.platform == "win32":
        base = Path(os.environ.get("APPDATA", Path.home()))
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "remote-agent" / "agent.toml"


def machine_uid() -> str | None:
    """The platform's stable machine id (``/etc/machine-id`` on Linux), if there is one."""
    for candidate in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            value = Path(candidate).read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if value:
            return value
    return None


@dataclass(frozen=True)
class AgentConfig:
    """Everything the agent keeps between runs."""

    agent_id: str = ""
    server: str = ""
    key: str = ""
    organization: str = ""
    site: str = ""
    tags: tuple[str, ...] = field(default_factory=tuple)
    ca_bundle: str = ""
    """PEM file of authorities trusted for the server's ``wss://`` socket, the version poll
    and update downloads, in addition to the system's."""
    update_public_key: str = ""
    """Base64 Ed25519 key of the release publisher; when set, only signed releases install."""

    def __repr__(self) -> str:
        shown = "***" if self.key else ""
        return (f"AgentConfig(agent_id={self.agent_id!r}, server={self.server!r}, "
                f"key={shown!r}, organization={self.organization!r}, site={self.site!r}, "
                f"tags={self.tags!r}, ca_bundle={self.ca_bundle!r}, "
                f"update_public_key={self.update_public_key!r})")

    @classmethod
    def load(cls, path: Path) -> AgentConfig:
        """Read ``path``; a missing file is an empty config, a broken one a ``ValueError``."""
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls()
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"agent config {path} is not valid TOML: {exc}") from None
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"agent config {path} has unknown keys {unknown}; "
                             f"known: {sorted(known)}")
        tags = data.get("tags", [])
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise ValueError(f"agent config {path}: tags must be a list of strings")
        for name in known - {"tags"}:
            if not isinstance(data.get(name, ""), str):
                raise ValueError(f"agent config {path}: {name} must be a string")
        return cls(**{**data, "tags": tuple(tags)})

    def save(self, path: Path) -> None:
        """Write atomically, owner-only (the key is a secret)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = []
        for name, value in asdict(self).items():
            if isinstance(value, tuple | list):
                lines.append(f"{name} = [{', '.join(json.dumps(v) for v in value)}]")
            else:
                lines.append(f"{name} = {json.dumps(value)}")
        temp = path.with_suffix(".tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
        os.replace(temp, path)

    def with_identity(self, path: Path) -> AgentConfig:
        """This config with the ``agent_id`` kept in ``path``, created there on first use.

        Only the id is written: a key given on the command line stays out of the file.
        """
        if self.agent_id:
            return self
        stored = AgentConfig.load(path)
        if not stored.agent_id:
            stored = replace(stored, agent_id=str(uuid.uuid4()))
            stored.save(path)
        return replace(self, agent_id=stored.agent_id)

"""The agent's own files during an update: the artifact, its staging copy, the previous one.

All names are the agent's: the staging file sits next to the running artifact, so
the final rename is atomic (one directory, one file system) and nothing a server
says ever becomes a path. At every instant the artifact's path holds either the
old build or the new one; the old one is kept as ``<name>.previous`` for rollback.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["UpdateFiles", "running_artifact"]


def running_artifact() -> Path | None:
    """The single-file build this process runs from, or ``None`` (a source install)."""
    main = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if main is None or not main.is_file() or not zipfile.is_zipfile(main):
        return None
    return main.resolve()


@dataclass(frozen=True)
class UpdateFiles:
    """Paths derived from the running artifact's path, and the steps that touch them."""

    artifact: Path

    @property
    def staging(self) -> Path:
        return self.artifact.with_name(f".{self.artifact.name}.staging")

    @property
    def previous(self) -> Path:
        return self.artifact.with_name(f"{self.artifact.name}.previous")

    @property
    def marker(self) -> Path:
        """Written just before the swap: which update the restarted process completes."""
        return self.artifact.with_name(f".{self.artifact.name}.update.json")

    def install(self, from_version: str, to_version: str) -> None:
        """Swap the verified staging file in; the old build stays as :attr:`previous`."""
        mode = self.artifact.stat().st_mode & 0o777
        os.chmod(self.staging, mode)
        self.previous.unlink(missing_ok=True)
        try:  # the old build, still whole, under a second name
            os.link(self.artifact, self.previous)
        except OSError:
            shutil.copy2(self.artifact, self.previous)
        self.marker.write_text(json.dumps({"from": from_version, "to": to_version}),
                               encoding="utf-8")
        _fsync(self.staging)
        os.replace(self.staging, self.artifact)  # the one atomic step
        _fsync_dir(self.artifact.parent)

    def rollback(self) -> None:
        """Put the kept previous build back in place (one atomic rename)."""
        if not self.previous.is_file():
            raise ValueError(f"no previous build to roll back to ({self.previous} is missing)")
        os.replace(self.previous, self.artifact)
        _fsync_dir(self.artifact.parent)

    def pending(self) -> dict[str, str] | None:
        """The update the marker names, if one was installed and not yet reported."""
        try:
            data = json.loads(self.marker.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or not all(isinstance(data.get(k), str)
                                                 for k in ("from", "to")):
            return None
        return {"from": data["from"], "to": data["to"]}

    def clean(self) -> None:
        """Drop what an interrupted or finished update left behind (never :attr:`previous`)."""
        self.staging.unlink(missing_ok=True)
        self.marker.unlink(missing_ok=True)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    if sys.platform == "win32":  # directories cannot be opened for fsync there
        return
    _fsync(path)

"""The one-file attended agent the join page hands out: the release with its session inside.

The configured self-contained release (setting ``join_agent_file``) is copied
with one more member, ``attended.json``: the server's base URL, the support
code and, when the server's certificate comes from a private authority, that
authority's PEM. The release's ``__main__`` finds the member and runs one
attended session from a temporary directory it removes afterwards. Nothing is
read from the file's name, so renaming the download cannot point the agent at
another server; the name carries only the code, for the end user's sake.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from .release import add_member
from .settings import ServerSettings

__all__ = ["attended_agent", "download_name", "join_agent_file"]

MEMBER = "attended.json"


def join_agent_file(settings: ServerSettings) -> Path | None:
    """The release the join page hands out, or ``None`` when none is set or readable."""
    if not settings.join_agent_file:
        return None
    path = Path(settings.join_agent_file)
    return path if path.is_file() else None


def download_name(code: str) -> str:
    """What the end user's browser saves the agent as: the code in it, dashes only."""
    return f"remote-support-{code}.pyz"


def attended_agent(release: Path, server: str, code: str, ca_bundle: str | None = None) -> bytes:
    """``release`` with ``attended.json`` added (any earlier one is refused, not doubled);
    ``ca_bundle``'s PEM goes inside, so the agent trusts a private CA with no setup."""
    ca_pem = Path(ca_bundle).read_text() if ca_bundle else ""
    data = io.BytesIO(release.read_bytes())
    with zipfile.ZipFile(data, "a") as archive:
        if MEMBER in archive.namelist():
            raise ValueError(f"{release} already carries a session ({MEMBER}); set "
                             "join_agent_file to a release as built")
        config = {"server": server, "code": code}
        if ca_pem:
            config["ca_pem"] = ca_pem
        add_member(archive, MEMBER, json.dumps(config).encode())
    return data.getvalue()

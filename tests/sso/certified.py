"""A certified OpenID provider in its own process: panva's ``oidc-provider`` (OpenID
Certified) under Node.js, from ``provider/`` beside this file, whose ``node_modules``
``scripts/bootstrap`` installs from the committed lock file.

It stands where the issue names Dex, which Debian 12 does not package (its ``dex`` is
a desktop-entry tool) and no registry these machines reach publishes. Like Dex with a
static-password connector it signs users in with a password; unlike the suite's
``oidc-provider-mock`` it serves HTTPS with a certificate of the test's own authority,
requires PKCE, and keeps scope claims (``groups``) for its userinfo endpoint.
"""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from remote_server.testing.oidc_provider import start_provider
from remote_server.testing.processes import free_port, stop_process
from remote_server.testing.tls_terminator import HOSTNAME, TestCA

from remote_core.testing.services import unavailable

__all__ = ["CertifiedProvider"]

PROJECT = Path(__file__).with_name("provider")


class CertifiedProvider:
    """``node provider.mjs`` on ``https://localhost:<port>`` with one client, allowed
    exactly ``redirect_url``, and the given password ``accounts``."""

    def __init__(self, workdir: Path, ca: TestCA, redirect_url: str,
                 accounts: Iterable[Mapping[str, Any]]) -> None:
        node = shutil.which("node")
        if node is None:
            unavailable("Node.js is missing (installed by scripts/bootstrap)")
        if not (PROJECT / "node_modules" / "oidc-provider").is_dir():
            unavailable(f"{PROJECT}/node_modules is missing: scripts/bootstrap installs it")
        self.port = free_port()
        self.ca = ca
        self.client_id = "remote-support"
        self.client_secret = secrets.token_urlsafe(32)
        self.log = workdir / "certified-provider.log"
        config = workdir / "certified-provider.json"
        config.write_text(json.dumps({
            "port": self.port, "cert": str(ca.chain_pem), "key": str(ca.key_pem),
            "client": {"client_id": self.client_id, "client_secret": self.client_secret,
                       "redirect_uris": [redirect_url]},
            "accounts": [dict(account) for account in accounts]}))
        self.args = [node, str(PROJECT / "provider.mjs"), str(config)]
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def issuer(self) -> str:
        return f"https://{HOSTNAME}:{self.port}"

    def __enter__(self) -> CertifiedProvider:
        self.process = start_provider(self.args, self.log, self.issuer,
                                      self.ca.client_context())
        return self

    def __exit__(self, *_exc: object) -> None:
        if self.process is not None:
            stop_process(self.process)

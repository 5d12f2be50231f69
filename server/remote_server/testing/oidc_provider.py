"""A real OpenID provider in its own process for the single sign-on tests.

``oidc-provider-mock`` (authlib underneath) serves discovery, a JWKS, the authorization
endpoint with its sign-in form, and the token endpoint with PKCE; clients register
(RFC 7591) with their exact redirect URIs, and every authorization request must carry a
nonce. It listens on plain HTTP on 127.0.0.1, which the server accepts only with its
``oidc_allow_http_loopback`` setting. Its sign-in form asks for a subject, not a password:
the users and their claims (``groups`` ...) are fixed when it starts.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import httpx

from .processes import free_port, stop_process

__all__ = ["OpenIdProvider", "start_provider"]


def start_provider(args: list[str], log: Path, issuer: str,
                   verify: ssl.SSLContext | bool = True) -> subprocess.Popen[bytes]:
    """Run a provider's command, output to ``log``; return once it serves its discovery
    document at ``issuer`` (checked with ``verify``)."""
    with log.open("ab") as out:
        process = subprocess.Popen(args, stdout=out, stderr=out, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the provider exited: {log.read_text()[-2000:]}")
        try:
            answer = httpx.get(issuer + "/.well-known/openid-configuration", timeout=1,
                               verify=verify)
            if answer.status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    stop_process(process)
    raise RuntimeError(f"the provider did not start: {log.read_text()[-2000:]}")


class OpenIdProvider:
    """``python -m oidc_provider_mock`` with fixed users; :meth:`register` makes a client."""

    def __init__(self, workdir: Path, users: Iterable[Mapping[str, Any]]) -> None:
        self.port = free_port()
        self.log = workdir / "provider.log"
        self.args = [sys.executable, "-m", "oidc_provider_mock", "--host", "127.0.0.1",
                     "--port", str(self.port), "--require-registration", "true",
                     "--require-nonce", "true"]
        for user in users:
            self.args += ["--user-claims", json.dumps(dict(user))]
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> OpenIdProvider:
        self.process = start_provider(self.args, self.log, self.issuer)
        return self

    def __exit__(self, *_exc: object) -> None:
        if self.process is not None:
            stop_process(self.process)

    def register(self, redirect_url: str) -> tuple[str, str]:
        """A new client allowed exactly ``redirect_url``: its id and secret."""
        answer = httpx.post(self.issuer + "/oauth2/clients", timeout=10,
                            json={"redirect_uris": [redirect_url],
                                  "token_endpoint_auth_method": "client_secret_basic"})
        assert answer.status_code == 201, answer.text
        data = answer.json()
        return str(data["client_id"]), str(data["client_secret"])

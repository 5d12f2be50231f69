"""The server behind a real TLS terminator, as deployments run it: HAProxy, nginx or Caddy;
or ``remote-support serve`` terminating TLS itself (:class:`TlsServerProcess`).

The shapes differ in what reaches the server:

- ``haproxy-tcp``: HAProxy in ``mode tcp`` with ``ssl crt``. It decrypts and
  forwards the bytes; the server sees the browser's own ``Host`` and
  ``Origin`` and no header that says TLS was ever there.
- ``nginx-http`` and ``caddy-http``: HTTP proxies that pass ``Host`` on and set
  ``X-Forwarded-Proto`` and ``X-Forwarded-For``, WebSockets upgraded. They run
  the configurations ``deploy/`` ships (:func:`shipped`), only their addresses
  and certificate paths changed.

Certificates come from a throwaway :class:`TestCA` (``trustme``); nothing is
trusted that the test did not hand over: Python clients get
:meth:`TestCA.client_context`, Chromium an NSS database in its own ``HOME``
(:meth:`TestCA.browser_home`), the agent its ``ca_bundle``. The Debian
packages ``haproxy``, ``nginx``, ``caddy`` and ``libnss3-tools`` (``certutil``)
come with ``scripts/bootstrap``; a missing one skips the test, or fails it under
``REMOTE_SUPPORT_REQUIRE_SERVICES=1``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .processes import ServerProcess, free_port, stop_process

__all__ = ["DEPLOY", "HOSTNAME", "KINDS", "PROXIES", "Deployment", "Terminator", "TestCA",
           "TlsServerProcess", "agent_home", "deployment", "shipped"]

Kind = Literal["haproxy-tcp", "nginx-http", "caddy-http"]
KINDS: tuple[Kind, ...] = ("haproxy-tcp", "nginx-http", "caddy-http")
PROXIES: tuple[Kind, ...] = ("nginx-http", "caddy-http")
"""The HTTP reverse proxies whose configurations ``deploy/`` ships."""
DEPLOY = Path(__file__).resolve().parents[3] / "deploy"
"""The repository's ``deploy/`` directory (the configurations as shipped)."""
HOSTNAME = "localhost"
"""The name browsers and agents use; the certificate is for it (and 127.0.0.1)."""

_READY_TIMEOUT = 15.0


def shipped(name: str, changes: dict[str, str]) -> str:
    """``deploy/<name>`` with each of ``changes`` made wherever it occurs: a test runs the
    shipped file, and a change that no longer applies fails rather than passing unseen."""
    text = (DEPLOY / name).read_text(encoding="utf-8")
    for old, new in changes.items():
        if old not in text:
            raise AssertionError(f"deploy/{name} no longer holds {old!r}")
        text = text.replace(old, new)
    return text


@dataclass
class TestCA:
    """A certificate authority of the test's own and a server certificate it issued."""

    __test__ = False  # not a pytest test class

    directory: Path

    def __post_init__(self) -> None:
        import trustme

        self.directory.mkdir(parents=True, exist_ok=True)
        self._ca = trustme.CA()
        self._ca.cert_pem.write_to_path(str(self.ca_pem))
        self.renew()

    def renew(self) -> None:
        """Issue a new server certificate (new key, same names) over the files."""
        cert = self._ca.issue_cert(HOSTNAME, "127.0.0.1")
        cert.private_key_pem.write_to_path(str(self.key_pem))
        self.chain_pem.write_bytes(b"".join(blob.bytes() for blob in cert.cert_chain_pems))
        cert.private_key_and_cert_chain_pem.write_to_path(str(self.key_and_chain_pem))

    @property
    def ca_pem(self) -> Path:
        """The authority's certificate: what a client is given to trust."""
        return self.directory / "ca.pem"

    @property
    def key_pem(self) -> Path:
        return self.directory / "server.key"

    @property
    def chain_pem(self) -> Path:
        return self.directory / "server-chain.pem"

    @property
    def key_and_chain_pem(self) -> Path:
        """Key and chain in one file, as HAProxy's ``ssl crt`` takes them."""
        return self.directory / "server-key-and-chain.pem"

    def client_context(self) -> ssl.SSLContext:
        """A verifying client context that trusts this authority only."""
        return ssl.create_default_context(cafile=str(self.ca_pem))

    def browser_home(self, home: Path) -> Path:
        """A ``HOME`` whose NSS database (``~/.pki/nssdb``) trusts this authority:
        Chromium on Linux reads its authorities from there."""
        certutil = shutil.which("certutil")
        if certutil is None:
            raise RuntimeError("certutil is missing (Debian package libnss3-tools, "
                               "installed by scripts/bootstrap)")
        nssdb = home / ".pki" / "nssdb"
        nssdb.mkdir(parents=True, exist_ok=True)
        database = f"sql:{nssdb}"
        subprocess.run([certutil, "-d", database, "-N", "--empty-password"], check=True,
                       capture_output=True, timeout=30)
        subprocess.run([certutil, "-d", database, "-A", "-t", "C,,", "-n", "test-ca",
                        "-i", str(self.ca_pem)], check=True, capture_output=True, timeout=30)
        return home


class TlsServerProcess(ServerProcess):
    """``remote-support serve`` terminating TLS itself (``tls_cert``/``tls_key``) with a
    certificate of ``ca``, reached as ``https://localhost:<port>``."""

    def __init__(self, workdir: Path, ca: TestCA, **settings: object) -> None:
        super().__init__(workdir, tls_cert=ca.chain_pem, tls_key=ca.key_pem, **settings)
        self.ca = ca
        self.verify = ca.client_context()

    @property
    def url(self) -> str:
        return f"https://{HOSTNAME}:{self.port}"

    def presented_certificate(self) -> bytes:
        """The DER certificate a new connection is shown now (verified against ``ca``)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as raw, \
                self.ca.client_context().wrap_socket(raw, server_hostname=HOSTNAME) as tls:
            der = tls.getpeercert(binary_form=True)
        assert der is not None
        return der


@dataclass
class Terminator:
    """One running terminator on ``127.0.0.1:port`` in front of ``backend_port``."""

    kind: Kind
    ca: TestCA
    backend_port: int
    directory: Path
    port: int = field(default_factory=free_port)
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        """The public base URL, ``https://localhost:<port>``."""
        return f"https://{HOSTNAME}:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"wss://{HOSTNAME}:{self.port}"

    @property
    def host(self) -> str:
        """What a browser sends as ``Host`` (and the authority of its ``Origin``)."""
        return f"{HOSTNAME}:{self.port}"

    @property
    def log(self) -> Path:
        return self.directory / f"{self.kind}.log"

    def start(self) -> Terminator:
        self.directory.mkdir(parents=True, exist_ok=True)
        command = {"haproxy-tcp": self._haproxy, "nginx-http": self._nginx,
                   "caddy-http": self._caddy}[self.kind]()
        env = self._caddy_env() if self.kind == "caddy-http" else None
        with self.log.open("ab") as log:
            self._process = subprocess.Popen(command, stdout=log, stderr=log, env=env,
                                             stdin=subprocess.DEVNULL)
        self._wait_ready()
        return self

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            stop_process(process)

    def _binary(self, name: str) -> str:
        found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
        if found is None:  # skip, or fail where services are required
            from remote_core.testing.services import unavailable

            unavailable(f"{name} is missing (Debian package {name}, installed by "
                        "scripts/bootstrap)")
        return found

    def _haproxy(self) -> list[str]:
        config = self.directory / "haproxy.cfg"
        config.write_text(f"""\
global
    maxconn 256
    log stderr format raw local0 info

defaults
    mode tcp
    log global
    option tcplog
    option logasap
    timeout connect 5s
    timeout client 1h
    timeout server 1h

frontend tls
    bind 127.0.0.1:{self.port} ssl crt {self.ca.key_and_chain_pem}
    default_backend server

backend server
    server app 127.0.0.1:{self.backend_port}
""")
        binary = self._binary("haproxy")
        subprocess.run([binary, "-c", "-q", "-f", str(config)], check=True, timeout=30)
        return [binary, "-db", "-f", str(config)]

    def _nginx(self) -> list[str]:
        """The shipped ``deploy/nginx/remote-support.conf``, only its addresses and paths
        changed, inside a minimal ``nginx.conf`` of the test's own directory."""
        d = self.directory
        for name in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (d / "temp" / name).mkdir(parents=True, exist_ok=True)
        site = d / "remote-support.conf"
        site.write_text(shipped("nginx/remote-support.conf", {
            "listen 443 ssl;": f"listen 127.0.0.1:{self.port} ssl;",
            "listen [::]:443 ssl;": "",
            "listen 80;": f"listen 127.0.0.1:{free_port()};",
            "listen [::]:80;": "",
            "server_name support.example.com;": f"server_name {HOSTNAME};",
            "/etc/ssl/certs/remote-support.pem": str(self.ca.chain_pem),
            "/etc/ssl/private/remote-support.key": str(self.ca.key_pem),
            "server 127.0.0.1:8080;": f"server 127.0.0.1:{self.backend_port};",
        }))
        # As root, nginx would hand its workers to "nobody", who cannot enter the
        # test's private directories; as anyone else the line is not needed.
        user = "user root;" if os.geteuid() == 0 else ""
        config = d / "nginx.conf"
        config.write_text(f"""\
{user}
daemon off;
worker_processes 1;
pid {d / 'nginx.pid'};
error_log {d / 'nginx-error.log'} info;
events {{ worker_connections 256; }}
http {{
    access_log {d / 'nginx-access.log'};
    client_body_temp_path {d / 'temp' / 'body'};
    proxy_temp_path {d / 'temp' / 'proxy'};
    fastcgi_temp_path {d / 'temp' / 'fastcgi'};
    uwsgi_temp_path {d / 'temp' / 'uwsgi'};
    scgi_temp_path {d / 'temp' / 'scgi'};
    include {site};
}}
""")
        binary = self._binary("nginx")
        base = [binary, "-e", "stderr", "-p", str(d), "-c", str(config)]
        subprocess.run([*base, "-t", "-q"], check=True, timeout=30)
        return base

    def _caddy(self) -> list[str]:
        """The shipped ``deploy/caddy/Caddyfile``, only its addresses and paths changed
        (and no admin endpoint, so several Caddys of tests run side by side)."""
        d = self.directory
        config = d / "Caddyfile"
        config.write_text(shipped("caddy/Caddyfile", {
            "{\n\tservers {": f"{{\n\tadmin off\n\thttp_port {free_port()}\n"
                                 f"\thttps_port {self.port}\n\tservers {{",
            "support.example.com {": f"{HOSTNAME}:{self.port} {{",
            "/etc/ssl/certs/remote-support.pem": str(self.ca.chain_pem),
            "/etc/ssl/private/remote-support.key": str(self.ca.key_pem),
            "reverse_proxy 127.0.0.1:8080": f"reverse_proxy 127.0.0.1:{self.backend_port}",
        }))
        binary = self._binary("caddy")
        subprocess.run([binary, "validate", "--config", str(config), "--adapter", "caddyfile"],
                       check=True, timeout=60, capture_output=True, env=self._caddy_env())
        return [binary, "run", "--config", str(config), "--adapter", "caddyfile"]

    def _caddy_env(self) -> dict[str, str]:
        """Caddy keeps its state under ``HOME``/XDG directories: the test's own."""
        home = self.directory / "home"
        return {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(home / "data"),
                "XDG_CONFIG_HOME": str(home / "config")}

    def _wait_ready(self) -> None:
        """Until a TLS handshake with the test CA succeeds on the port."""
        assert self._process is not None
        context = self.ca.client_context()
        deadline = time.monotonic() + _READY_TIMEOUT
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(f"{self.kind} exited with {self._process.returncode}: "
                                   f"{self.log.read_text(errors='replace')[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as raw, \
                        context.wrap_socket(raw, server_hostname=HOSTNAME):
                    return
            except OSError as exc:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"{self.kind} did not accept TLS on port {self.port}: "
                                       f"{self.log.read_text(errors='replace')[-2000:]}") from exc
                time.sleep(0.05)


@dataclass
class Deployment:
    """A server process with the shipped settings behind one terminator."""

    ca: TestCA
    server: ServerProcess
    terminator: Terminator

    @property
    def url(self) -> str:
        return self.terminator.url


@contextmanager
def deployment(kind: Kind, workdir: Path, **settings: object) -> Iterator[Deployment]:
    """A fresh CA, ``remote-support serve`` (``settings``: listed deviations only, as for
    :class:`ServerProcess`) and a ``kind`` terminator in front of it."""
    ca = TestCA(workdir / "ca")
    server = ServerProcess(workdir / "server", **settings).start()
    try:
        terminator = Terminator(kind, ca, server.port, workdir / kind).start()
        try:
            yield Deployment(ca, server, terminator)
        finally:
            terminator.stop()
    finally:
        server.stop()


def agent_home(home: Path, ca: TestCA) -> Path:
    """An agent ``HOME`` whose ``agent.toml`` names ``ca``'s certificate as ``ca_bundle``
    (for :class:`~remote_server.testing.processes.AgentProcess`)."""
    config = home / "config" / "remote-agent" / "agent.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"ca_bundle = {json.dumps(str(ca.ca_pem))}\n", encoding="utf-8")
    return home

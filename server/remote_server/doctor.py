"""``remote-support doctor``: what is wrong with this deployment, and how to fix it.

Each check gives one line: ``ok``, ``warning`` (works, but look at it) or
``error`` (something will fail), with the fix. The exit status is 1 when any
check is an error, else 0. Checks that need the settings stop when they do not
load; the others run independently, so one outage does not hide another.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from remote_core.errors import RemoteSupportError

from .settings import ServerSettings

__all__ = ["Check", "check_certificate", "check_clock", "doctor", "run_checks"]

CLOCK_WARNING = 2.0
"""Seconds of skew against the database server's clock that earn a warning."""
CLOCK_ERROR = 30.0
"""Seconds of skew that earn an error: token lifetimes and node leases stop meaning what
they say."""
CERT_SOON = timedelta(days=14)
"""A certificate expiring within this earns a warning."""
BUS_TIMEOUT = 5.0


@dataclass(frozen=True)
class Check:
    """One checked thing: ``level`` is ok, warning or error; ``fix`` says what to do."""

    name: str
    level: str
    message: str
    fix: str = ""

    def line(self) -> str:
        fix = f" (fix: {self.fix})" if self.fix and self.level != "ok" else ""
        return f"{self.level:<7} {self.name}: {self.message}{fix}"


def ok(name: str, message: str) -> Check:
    return Check(name, "ok", message)


def warning(name: str, message: str, fix: str) -> Check:
    return Check(name, "warning", message, fix)


def error(name: str, message: str, fix: str) -> Check:
    return Check(name, "error", message, fix)


def doctor(cli: Mapping[str, Any]) -> int:
    """Print every check; 1 when one of them is an error."""
    checks = list(run_checks(cli))
    for check in checks:
        print(check.line())
    failed = any(check.level == "error" for check in checks)
    print("something is wrong: see the errors above" if failed else "all checks passed")
    return 1 if failed else 0


def run_checks(cli: Mapping[str, Any]) -> Iterator[Check]:
    try:
        settings = ServerSettings.load(cli=cli)
    except RemoteSupportError as exc:
        yield error("settings", str(exc), "correct the setting named (REMOTE_SUPPORT_* "
                                          "variables, flags or the --config file)")
        return
    yield ok("settings", "loaded")
    yield from _check_plugins(settings)
    yield from _check_database(settings)
    yield from _check_bus(settings)
    cert = getattr(settings, "tls_cert", None)
    if cert:
        key = getattr(settings, "tls_key", None)
        yield from check_certificate(Path(cert), Path(key) if key else None)


def _check_plugins(settings: ServerSettings) -> Iterator[Check]:
    from .cli import plugin_set

    try:
        plugins = plugin_set(settings)
    except RemoteSupportError as exc:
        yield error("plugins", str(exc), "install the plugin or correct REMOTE_SUPPORT_PLUGINS")
        return
    names = ", ".join(info.name for info in plugins.describe())
    yield ok("plugins", names or "(none)")


def _check_database(settings: ServerSettings) -> Iterator[Check]:
    from remote_core.plugins import get_plugin_manager

    try:
        spec = get_plugin_manager(settings).store_for_url(settings.database_url)
        if spec.admin is None:
            yield warning("database", f"the storage plugin {spec.name!r} offers no checks",
                          "check the database by hand")
            return
        admin = spec.admin(settings.database_url)
        revision, head = admin.schema()
    except RemoteSupportError as exc:
        yield error("database", str(exc), "start the database server, or correct "
                                          "REMOTE_SUPPORT_DATABASE_URL")
        return
    if revision is None:
        yield warning("database", "reachable, no schema yet",
                      "run remote-support migrate (serve does it on start)")
    elif revision == head:
        yield ok("database", f"reachable, schema at the newest revision ({head})")
    else:
        yield error("database", f"schema at revision {revision}, not this release's {head}",
                    "run remote-support migrate (serve does it on start); when it refuses, "
                    "a newer release wrote the database: run that one")
    try:
        before = time.time()
        theirs = admin.clock()
        after = time.time()
    except RemoteSupportError as exc:
        yield error("clock", f"cannot read the database server's clock: {exc}",
                    "check the database connection")
        return
    if theirs is None:
        yield ok("clock", "the database shares this host's clock (SQLite)")
        return
    mine = datetime.fromtimestamp((before + after) / 2, UTC)
    yield check_clock((mine - theirs).total_seconds())


def check_clock(skew: float) -> Check:
    """The verdict on ``skew`` seconds between this host's clock and the database's."""
    text = f"{abs(skew):.1f} s {'ahead of' if skew >= 0 else 'behind'} the database server"
    fix = "synchronise both hosts' clocks (systemd-timesyncd, chrony or ntpd)"
    if abs(skew) >= CLOCK_ERROR:
        return error("clock", text, fix)
    if abs(skew) >= CLOCK_WARNING:
        return warning("clock", text, fix)
    return ok("clock", text)


def _check_bus(settings: ServerSettings) -> Iterator[Check]:
    url = settings.bus_url
    if url is None:
        return
    parts = urlsplit(url)
    where = f"{parts.hostname}:{parts.port or 4222}"  # never the credentials

    async def quiet(_error: Exception) -> None:
        """The verdict below says it in one line; the client would log a traceback."""

    async def reach() -> None:
        import nats

        nc = await nats.connect(url, connect_timeout=BUS_TIMEOUT, error_cb=quiet,
                                max_reconnect_attempts=0, allow_reconnect=False)
        await nc.close()

    try:
        # A refused connection answers at once; the NATS client would retry it until
        # its timeout. Then the client checks what the socket cannot: protocol, auth.
        socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 4222),
                                 timeout=BUS_TIMEOUT).close()
        asyncio.run(asyncio.wait_for(reach(), BUS_TIMEOUT * 2))
    except Exception as exc:  # every failure to reach it is the verdict
        yield error("bus", f"NATS at {where} is not reachable ({type(exc).__name__})",
                    "start NATS or correct REMOTE_SUPPORT_BUS_URL")
        return
    yield ok("bus", f"NATS at {where} reachable")


def check_certificate(cert: Path, key: Path | None, *,
                      now: datetime | None = None) -> Iterator[Check]:
    """A TLS certificate file (and its key): readable, matching, valid now, not expiring
    within :data:`CERT_SOON`."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    fix = "point the certificate setting at a readable PEM file"
    try:
        certificate = x509.load_pem_x509_certificate(cert.read_bytes())
    except (OSError, ValueError) as exc:
        yield error("certificate", f"cannot read {cert}: {exc}", fix)
        return
    now = now or datetime.now(UTC)
    subject = certificate.subject.rfc4514_string()
    expires = certificate.not_valid_after_utc
    renew = "renew the certificate and reload the server"
    if now < certificate.not_valid_before_utc:
        yield error("certificate", f"{subject} is not valid before "
                                   f"{certificate.not_valid_before_utc:%Y-%m-%d}",
                    "check this host's clock, or the certificate's dates")
    elif expires <= now:
        yield error("certificate", f"{subject} expired on {expires:%Y-%m-%d}", renew)
    elif expires - now <= CERT_SOON:
        yield warning("certificate", f"{subject} expires on {expires:%Y-%m-%d}", renew)
    else:
        yield ok("certificate", f"{subject} valid until {expires:%Y-%m-%d}")
    if key is None:
        return
    try:
        private = serialization.load_pem_private_key(key.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        yield error("certificate key", f"cannot read {key}: {exc}",
                    "point the key setting at the certificate's unencrypted PEM key")
        return
    pem = serialization.PublicFormat.SubjectPublicKeyInfo
    encoding = serialization.Encoding.PEM
    if private.public_key().public_bytes(encoding, pem) != \
            certificate.public_key().public_bytes(encoding, pem):
        yield error("certificate key", f"{key} does not match {cert}",
                    "use the key the certificate was issued for")
    else:
        yield ok("certificate key", "matches the certificate")

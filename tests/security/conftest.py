"""Harness of the security suite (tests/security/README.md): attacks over real sockets.

The helpers are the relay suite's (:class:`Admin`, :class:`Peer`,
:func:`relay_settings`) and the live-server module's, imported rather than
copied, so an attack here speaks to the server exactly as the functional
suites do. Every setting that differs from the shipped defaults goes through
:mod:`remote_server.testing.deviations`.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import pytest
from remote_server.testing.liveserver import LiveServer, live_server
from remote_server.testing.postgres_cluster import private_postgres_fixture

from ..relay.conftest import ADMIN_PASSWORD, IMPATIENT, SHARED_KEY, Admin, Peer, relay_settings

__all__ = ["ADMIN_PASSWORD", "IMPATIENT", "SHARED_KEY", "Admin", "Peer", "RawResponse",
           "private_postgres_fixture", "raw_request", "relay_settings"]


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One live server for the suite, with the relay suite's deviations: every client speaks
    from its own address (``fresh_ip``), so no attack's limits or lockouts reach another."""
    with live_server(relay_settings(tmp_path_factory.mktemp("security"))) as live:
        yield live


@pytest.fixture(scope="module")
def admin(server: LiveServer) -> Admin:
    return Admin(server)


@pytest.fixture(scope="module")
def impatient(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A server whose timeouts are all shortened together (the relay suite's IMPATIENT)."""
    with live_server(relay_settings(tmp_path_factory.mktemp("impatient"), **IMPATIENT)) as live:
        yield live


@dataclass(frozen=True)
class RawResponse:
    status: int
    headers: dict[str, str]
    body: bytes


def raw_request(server: LiveServer, method: str, target: str, *,
                headers: Mapping[str, str] | None = None, body: bytes = b"") -> RawResponse:
    """One HTTP/1.1 request whose target goes on the wire exactly as written.

    HTTP clients normalise ``..``, ``//`` and percent-escapes before sending;
    an attacker's request does not, and neither does this one.
    """
    lines = [f"{method} {target} HTTP/1.1", f"Host: 127.0.0.1:{server.port}",
             "Connection: close", f"Content-Length: {len(body)}",
             *(f"{k}: {v}" for k, v in (headers or {}).items())]
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
        conn.sendall("\r\n".join(lines).encode("latin-1") + b"\r\n\r\n" + body)
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parsed = dict(line.split(":", 1) for line in header_lines if ":" in line)
    return RawResponse(int(status_line.split()[1]),
                       {k.strip().lower(): v.strip() for k, v in parsed.items()}, rest)

"""T40: the agent's ``wss://`` socket to the server refuses a certificate it cannot verify.

The update download's TLS is in agent/tests/test_update_steps.py (plain http,
https-to-http redirects, an untrusted certificate); the agent's connection to
the server uses the same context (``update_download.tls_context``, the
system's roots plus ``ca_bundle``) through ``remote_core.wsclient``. Here it
meets a TLS endpoint with a certificate of an unknown authority, of another
authority than its bundle's, and of the right authority for another name
(MeshCentral CVE-2023-51837; ASVS 12.3.2).
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest
import trustme
from remote_agent.update_download import tls_context

from remote_core.wsclient import HandshakeError, connect

pytestmark = pytest.mark.anyio


@contextmanager
def tls_endpoint(ca: trustme.CA, *names: str) -> Iterator[int]:
    """A TLS listener on 127.0.0.1 with a certificate of ``ca`` for ``names``, answering
    every request 404; its port."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*names).configure_cert(context)
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with suppress(OSError), conn, context.wrap_socket(conn, server_side=True) as tls:
                request = b""
                while b"\r\n\r\n" not in request and (chunk := tls.recv(4096)):
                    request += chunk
                tls.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                tls.unwrap()  # close_notify, as a well-behaved server ends TLS

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def bundle(ca: trustme.CA, path: Path) -> str:
    ca.cert_pem.write_to_path(str(path))
    return str(path)


@pytest.mark.parametrize("case", ["unknown authority", "another authority than the bundle's",
                                  "the bundle's authority, another name"])
async def test_t40_the_agent_socket_refuses_a_certificate_it_cannot_verify(
        tmp_path: Path, case: str) -> None:
    server_ca, other_ca = trustme.CA(), trustme.CA()
    names = ("other.example",) if case.endswith("another name") else ("127.0.0.1", "localhost")
    trusted = {"unknown authority": "",
               "another authority than the bundle's": bundle(other_ca, tmp_path / "other.pem"),
               "the bundle's authority, another name": bundle(server_ca, tmp_path / "ca.pem")}
    with tls_endpoint(server_ca, *names) as port:
        with pytest.raises(ssl.SSLCertVerificationError):
            await connect(f"wss://127.0.0.1:{port}/ws/agent",
                          ssl_context=tls_context(trusted[case]))


async def test_t40_the_right_authority_and_name_get_past_tls(tmp_path: Path) -> None:
    """The control: with the bundle that signed it, the same endpoint passes verification
    and answers the upgrade (with a 404: it is no server of ours)."""
    ca = trustme.CA()
    with tls_endpoint(ca, "127.0.0.1") as port:
        with pytest.raises(HandshakeError) as refused:
            await connect(f"wss://127.0.0.1:{port}/ws/agent",
                          ssl_context=tls_context(bundle(ca, tmp_path / "ca.pem")),
                          handshake_timeout=5)
        assert refused.value.status == 404

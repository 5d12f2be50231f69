"""A real HTTPS webhook receiver on 127.0.0.1: it records each request and answers with
the statuses it was given, in order (the last one repeats)."""

from __future__ import annotations

import ssl
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from remote_server.testing.tls_terminator import TestCA


@dataclass(frozen=True)
class Received:
    headers: dict[str, str]
    body: bytes


class Receiver:
    """An HTTPS server whose certificate a :class:`TestCA` issued (for 127.0.0.1)."""

    def __init__(self, directory: Path, statuses: tuple[int, ...] = (200,)) -> None:
        self.ca = TestCA(directory)
        self.statuses = list(statuses)
        self.received: list[Received] = []
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.ca.chain_pem, self.ca.key_pem)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def url(self, host: str = "127.0.0.1") -> str:
        return f"https://{host}:{self.port}/hook?token=not-for-logs"

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                receiver.received.append(Received(dict(self.headers.items()), body))
                status = receiver.statuses.pop(0) if len(receiver.statuses) > 1 \
                    else receiver.statuses[0]
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        return Handler

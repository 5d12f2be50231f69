"""An HTTPS file server for agent-update tests, with a throwaway certificate authority.

It serves what a test publishes, and the ways a download goes wrong in the
field: an error status, an HTML page with 200, a body cut short, a body that
trickles in slowly. Its certificate is issued by its own trustme CA, which a
test writes to :attr:`ReleaseServer.ca_bundle` for the agent to trust.
"""

from __future__ import annotations

import collections
import ssl
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType

import trustme

__all__ = ["ReleaseServer", "Route"]


@dataclass(frozen=True)
class Route:
    body: bytes
    status: int = 200
    content_type: str = "application/octet-stream"
    cut_after: int | None = None
    """Close the connection after this many bytes, having announced the full length."""
    seconds_per_chunk: float = 0.0
    """Trickle the body in 4 KiB chunks this far apart."""
    location: str = ""
    """A ``Location`` header, for redirects."""


class ReleaseServer:
    """HTTPS on 127.0.0.1 and a free port; use as a context manager."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.ca = trustme.CA()
        self.ca_bundle = directory / "release-ca.pem"
        self.ca.cert_pem.write_to_path(str(self.ca_bundle))
        self.routes: dict[str, Route] = {}
        self.hits: collections.Counter[str] = collections.Counter()
        self.authorizations: collections.defaultdict[str, list[str]] = (
            collections.defaultdict(list))
        """Each request's ``Authorization`` header by path ("" when it had none)."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,),
                                        daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}/{path.lstrip('/')}"

    def publish(self, path: str, route: Route) -> str:
        self.routes["/" + path.lstrip("/")] = route
        return self.url(path)

    def __enter__(self) -> ReleaseServer:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                server.hits[self.path] += 1
                server.authorizations[self.path].append(self.headers.get("Authorization", ""))
                route = server.routes.get(self.path)
                if route is None:
                    route = Route(b"<html><body>Not Found</body></html>", status=404,
                                  content_type="text/html")
                self.send_response(route.status)
                self.send_header("Content-Type", route.content_type)
                self.send_header("Content-Length", str(len(route.body)))
                if route.location:
                    self.send_header("Location", route.location)
                self.end_headers()
                body = route.body if route.cut_after is None else route.body[:route.cut_after]
                try:
                    if not route.seconds_per_chunk:
                        self.wfile.write(body)
                    for start in range(0, len(body) if route.seconds_per_chunk else 0, 4096):
                        self.wfile.write(body[start:start + 4096])
                        self.wfile.flush()
                        time.sleep(route.seconds_per_chunk)
                except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                    pass
                if route.cut_after is not None:
                    self.close_connection = True

        return Handler

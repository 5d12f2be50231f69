"""A real server on an ephemeral 127.0.0.1 port, in a background thread, for tests and benchmarks.

The app runs under uvicorn exactly as ``remote-support serve`` runs it, so
requests cross a real socket; only the process boundary is missing.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import httpx

from remote_core.plugins import Plugins

from ..settings import ServerSettings
from ..web.app import create_app
from ..web.ratelimit import RateLimiter
from ..web.serving import Server, uvicorn_config

__all__ = ["ApiClient", "LiveServer", "ManualClock", "assert_problem", "eventually",
           "fresh_ip", "live_server"]


class ManualClock:
    """A monotonic clock the test moves by hand (rate-limit windows, lockouts)."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class LiveServer:
    def __init__(self, settings: ServerSettings, *, limiter: RateLimiter | None = None,
                 plugins: Plugins | None = None) -> None:
        self.app = create_app(settings, plugins, limiter=limiter)
        config = uvicorn_config(self.app, settings, host="127.0.0.1", port=0,
                                log_level="warning")
        self._server = Server(config)
        self._thread = threading.Thread(target=self._server.run, name="live-server",
                                        daemon=True)
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ctx(self) -> Any:
        """The running server's :class:`ServerContext` (read it, do not reach past it)."""
        return self.app.state.ctx

    def start(self, timeout: float = 30.0) -> None:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start (see the log above)")
            time.sleep(0.01)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=30)


@contextmanager
def live_server(settings: ServerSettings, *, limiter: RateLimiter | None = None,
                plugins: Plugins | None = None) -> Iterator[LiveServer]:
    server = LiveServer(settings, limiter=limiter, plugins=plugins)
    server.start()
    try:
        yield server
    finally:
        server.stop()


_ips = itertools.count(1)


def fresh_ip() -> str:
    """A client address no other caller in this process has used (own rate-limit buckets)."""
    n = next(_ips)
    return f"10.{n // 65536 % 256}.{n // 256 % 256}.{n % 256}"


class ApiClient(httpx.Client):
    """An HTTP client of one live server, speaking from one client IP, maybe logged in.

    The IP travels in ``X-Forwarded-For``, which the server believes only when the
    peer (127.0.0.1) is among its trusted proxies.
    """

    def __init__(self, server: LiveServer, token: str | None = None,
                 ip: str | None = None) -> None:
        self.server = server
        self.ip = ip or fresh_ip()
        headers = {"X-Forwarded-For": self.ip}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        super().__init__(base_url=server.base_url, headers=headers, timeout=30)

    def login(self, username: str, password: str) -> ApiClient:
        """A new client carrying a login token for ``username``."""
        r = self.post("/api/auth/login", json={"username": username, "password": password})
        assert r.status_code == 200, r.text
        return ApiClient(self.server, r.json()["access_token"])


def assert_problem(r: httpx.Response, status: int, *words: str) -> dict[str, Any]:
    """``r`` is an RFC 9457 problem with ``status`` whose detail mentions every word."""
    assert r.status_code == status, (r.status_code, r.text)
    assert r.headers["content-type"].startswith("application/problem+json"), r.headers
    body: dict[str, Any] = r.json()
    assert body["status"] == status and body["title"] and body["type"]
    for word in words:
        assert word in body["detail"], (word, body)
    return body


async def eventually(check: Callable[[], Any], wait: float = 10, what: str = "") -> Any:
    """Poll ``check`` until it returns something true (the server works in its own thread or
    process); past ``wait`` seconds fail, saying ``what`` was awaited."""
    try:
        with anyio.fail_after(wait):
            while True:
                value = check()
                if value:
                    return value
                await anyio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(f"not within {wait:g} s: {what or 'the condition'}") from None

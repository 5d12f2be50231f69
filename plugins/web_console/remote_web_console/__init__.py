"""Built-in plugin ``web_console``: the browser console and viewer, mounted at ``/console``.

The assets in ``static/`` are built from ``web_src/`` and committed, so the
server needs no Node.js; ``plugins/web_console/tests/test_web_build.py`` rebuilds and compares.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from remote_core import hookimpl
from remote_core.types import WebAppSpec

from .messages import MESSAGES_NAME, catalogues, serve_messages

__all__ = ["CONSOLE_PATH", "CSP_REPORT_PATH", "JOIN_PATH", "POLICY", "STATIC_DIR",
           "register_web_apps"]

STATIC_DIR = Path(__file__).resolve().parent / "static"
CONSOLE_PATH = "/console"
JOIN_PATH = "/join"
JOIN_ASSETS = frozenset({"join.js", "console.css", "favicon.svg"})
"""What the join page loads (and ``messages.json``, its words in the browser's language);
every other path under /join is the page itself."""

# Scripts only from this origin and never from strings (no 'unsafe-eval'), no
# inline code ('wasm-unsafe-eval' lets the page compile WebAssembly, the raw
# frames' zstd decoder bundled in its own script, and no script), no plugins,
# no framing, no <base> tricks, and DOM sinks that take only Trusted Types (the
# console uses none): what an agent reports can never run as script even if it
# slipped into markup. Violations go to the API,
# which logs each as one warning. Only report-uri: every browser sends it at
# once, while Chromium ignores report-uri as soon as report-to is present and
# then, measured here, delivered nothing within 20 s (the endpoint still takes
# report-to batches, for a proxy or a later policy that adds them).
CSP_REPORT_PATH = "/api/csp-report"
POLICY = "; ".join([
    "default-src 'self'", "script-src 'self' 'wasm-unsafe-eval'", "style-src 'self'",
    "img-src 'self' data: blob:", "connect-src 'self'", "object-src 'none'",
    "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'",
    "require-trusted-types-for 'script'", "trusted-types 'none'",
    f"report-uri {CSP_REPORT_PATH}",
])
_HEADERS = [
    (b"content-security-policy", POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-cache"),
]


class _SecurityHeaders:
    """Adds the console's security headers to every response of the wrapped app."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def make_console_app(_options: Mapping[str, Any] | None = None) -> ASGIApp:
    """The static console, ``index.html`` served for the directory (it has no options)."""
    return _SecurityHeaders(StaticFiles(directory=STATIC_DIR, html=True))


def make_join_app(_options: Mapping[str, Any] | None = None) -> ASGIApp:
    """The end user's join page: ``/join`` and ``/join/ABC-DEF-GHJ`` are the same page,
    which reads the code from its address; no login, the console's headers."""
    files = StaticFiles(directory=STATIC_DIR)
    messages = serve_messages(catalogues())

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            name = scope["path"].rsplit("/", 1)[-1]
            if name == MESSAGES_NAME:
                await messages(scope, receive, send)
                return
            if name not in JOIN_ASSETS:
                scope = {**scope, "path": scope.get("root_path", "") + "/join.html"}
        await files(scope, receive, send)

    return _SecurityHeaders(app)


@hookimpl
def register_web_apps() -> list[WebAppSpec]:
    return [WebAppSpec(name="console", path=CONSOLE_PATH, factory=make_console_app),
            WebAppSpec(name="join", path=JOIN_PATH, factory=make_join_app)]

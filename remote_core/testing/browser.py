"""Debian's Chromium under Playwright, run the way a technician runs the console.

Pages get the headers the server ships (never ``bypass_csp``), and every
uncaught page error, console error and Content-Security-Policy violation is
recorded from the first script of every page on: :func:`watched_context`
fails the test that opened it if any was seen. Page state is awaited by
polling ``page.evaluate`` from Python (:func:`wait_until`), which needs no
string evaluation inside the page.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "chromium", "log_in", "wait_until", "watched_context"]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]

# Runs before any script of every document (a DevTools injection, so the page's
# own CSP does not apply to it) and reports violations through a binding.
_RECORD_VIOLATIONS = """
addEventListener("securitypolicyviolation", (e) => {
  window.__reportPageProblem(
    `CSP violation: ${e.violatedDirective} blocked ${e.blockedURI || "inline"} ` +
    `(${e.sourceFile || location.href}:${e.lineNumber})`);
});
"""


@contextmanager
def chromium(**launch: Any) -> Iterator[Any]:
    """A headless Debian Chromium, started by Playwright."""
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), "Chromium is missing: scripts/bootstrap installs it"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=CHROMIUM_ARGS, **launch)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def watched_context(browser: Any, *, allow: tuple[str, ...] = (),
                    **options: Any) -> Iterator[Any]:
    """A browser context whose pages must stay clean: no page error, console error or
    CSP violation, from the first script on; asserted when the block ends normally.

    ``allow`` names the problems a test provokes on purpose (substrings of the report).
    """
    assert "bypass_csp" not in options, "tests run the console under its shipped CSP"
    context = browser.new_context(**options)
    problems: list[str] = []
    context.expose_binding("__reportPageProblem", lambda _source, text: problems.append(text))
    context.add_init_script(_RECORD_VIOLATIONS)
    context.on("weberror", lambda error: problems.append(f"page error: {error.error}"))
    context.on("console", lambda message: problems.append(
        f"console error: {message.text} ({message.location.get('url', '')})")
        if message.type == "error" else None)
    try:
        yield context
    finally:
        context.close()
    unexpected = [p for p in problems if not any(word in p for word in allow)]
    assert not unexpected, "the browser reported problems:\n" + "\n".join(unexpected)


def wait_until(check: Callable[[], Any], timeout: float = 30.0,
               what: str | Callable[[], str] = "") -> Any:
    """Poll ``check`` (typically a ``page.evaluate``) until it returns something true;
    ``what`` (or what it returns, asked at the time) says what was awaited."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            said = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout} s waiting for {said or check}")
        time.sleep(0.05)


def log_in(page: Any, base_url: str, username: str, password: str) -> None:
    """Log in on the console at ``base_url`` as a technician does, with a password alone
    (an account with a second factor needs its own steps after the password)."""
    page.goto(f"{base_url}/console/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_selector("nav .who")

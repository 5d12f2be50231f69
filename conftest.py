"""What every test suite of this repository shares (plugin authors' suites bring their own)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """asyncio: what the server (uvicorn, on uvloop) and the agent run on."""
    return "asyncio"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium driven by Playwright, one per test module (a module that needs
    another, say one trusting a test authority, defines its own)."""
    pytest.importorskip("playwright.sync_api")
    from remote_core.testing.browser import chromium

    with chromium() as instance:
        yield instance


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A browser test past its timeout ends the run with every thread's stack (pytest-timeout's
    thread method) rather than hang it: the signal method's exception can land inside a
    callback of the asyncio loop that Playwright's sync API runs, which logs and drops it."""
    for item in items:
        if item.get_closest_marker("browser") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(method="thread"))

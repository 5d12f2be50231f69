"""What every test suite of this repository shares (plugin authors' suites bring their own)."""

from __future__ import annotations

import os
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


def _real_time_threads() -> list[int]:
    found = []
    for name in os.listdir("/proc/self/task"):
        try:
            if os.sched_getscheduler(int(name)) in (os.SCHED_FIFO, os.SCHED_RR):
                found.append(int(name))
        except OSError:  # a thread that ended meanwhile
            pass
    return found


@pytest.fixture(autouse=True)
def _normal_scheduling() -> Iterator[None]:
    """A test that leaves this process's threads real-time fails, and they go back to the
    normal scheduler: a busy real-time thread (and every process started after, which
    inherits it) starves the rest of the suite on a small machine; SVT-AV1 run as root once
    did that to the whole run."""
    yield
    if not os.path.isdir("/proc/self/task"):
        return
    left = _real_time_threads()
    for tid in left:
        try:
            os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
        except OSError:
            pass
    assert not left, f"the test left {len(left)} threads of the test process real-time"

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from harness import Api, ServerProcess

from remote_core.testing.xvfb import shared_xvfb


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="module")
def x_display():
    """The process-wide Xvfb: Tk in this process must never lose its display."""
    return shared_xvfb(800, 600)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    process = ServerProcess(tmp_path_factory.mktemp("server")).start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def api(server):
    client = Api(server)
    yield client
    client.close()

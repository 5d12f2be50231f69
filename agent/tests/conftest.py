from __future__ import annotations

import pytest
from remote_server.testing.processes import Api, ServerProcess

from remote_core.testing.xvfb import shared_xvfb


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

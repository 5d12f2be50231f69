"""What the end-to-end recording modules share: a small X screen and a recording server,
one of each per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from remote_server.testing.processes import Api, ServerProcess

from remote_core.testing.xvfb import Xvfb, xvfb

WIDTH, HEIGHT = 320, 240
"""The screen's size: :func:`remote_server.testing.recordings.shows` looks at (250, 200)."""


@pytest.fixture(scope="module")
def display() -> Iterator[Xvfb]:
    with xvfb(WIDTH, HEIGHT, set_display=False) as server:
        yield server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path_factory.mktemp("recording-server"), recordings="on").start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def api(server: ServerProcess) -> Iterator[Api]:
    client = Api(server)
    yield client
    client.close()

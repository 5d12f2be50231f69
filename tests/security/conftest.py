"""Harness of the security suite (tests/security/README.md): attacks over real sockets.

The helpers are the relay suite's (:class:`Admin`, :class:`Peer`,
:func:`relay_settings`) and the live-server module's, imported rather than
copied, so an attack here speaks to the server exactly as the functional
suites do. Every setting that differs from the shipped defaults goes through
:mod:`remote_core.testing.deviations`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from remote_core.testing.liveserver import LiveServer, live_server

from ..relay.conftest import ADMIN_PASSWORD, SHARED_KEY, Admin, Peer, relay_settings

__all__ = ["ADMIN_PASSWORD", "SHARED_KEY", "Admin", "Peer", "relay_settings"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One live server per module, with the relay suite's deviations (its own IP per client)."""
    with live_server(relay_settings(tmp_path_factory.mktemp("security"))) as live:
        yield live


@pytest.fixture(scope="module")
def admin(server: LiveServer) -> Admin:
    return Admin(server)

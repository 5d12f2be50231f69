"""The one uvicorn configuration, and the allocator tuning of the serving process."""

from __future__ import annotations

import sys

import pytest
from remote_server.settings import ServerSettings
from remote_server.web.serving import tune_allocator, uvicorn_config
from remote_server.web.wsprotocol import RelayWebSocketProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol


def test_the_uvicorn_configuration_the_relay_needs() -> None:
    config = uvicorn_config(object(), ServerSettings(), port=0)
    assert config.ws_per_message_deflate is False and config.ws_ping_interval is None
    assert (config.ws, config.ws_max_size) == (RelayWebSocketProtocol, 16 * 1024 * 1024)
    assert issubclass(RelayWebSocketProtocol, WebSocketsSansIOProtocol)  # the shipped one
    assert config.proxy_headers is False and config.port == 0
    other = uvicorn_config(object(), ServerSettings(ws_impl="wsproto"), port=0)
    assert other.ws == "wsproto"  # as named: no inline answers there, every message read


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc tuning is Linux-only")
def test_the_allocator_is_tuned_on_glibc() -> None:
    assert tune_allocator() is True

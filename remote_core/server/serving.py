"""Running the app under uvicorn as the relay needs it, with a shutdown that says goodbye.

uvicorn's own shutdown closes every WebSocket with 1012 before the app's
lifespan hears of it, so peers would never learn why. :class:`Server` first
lets the registry send every peer ``Disconnect{reason}`` and close its socket,
then hands over to uvicorn.
"""

from __future__ import annotations

import socket
from typing import Any

import uvicorn

from ..settings import Settings

__all__ = ["SHUTDOWN_REASON", "Server", "serve", "uvicorn_config"]

SHUTDOWN_REASON = "server shutting down"


def uvicorn_config(app: Any, settings: Settings, **overrides: Any) -> uvicorn.Config:
    """The one uvicorn configuration of the server (the CLI, tests and benchmarks share it)."""
    options: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "ws": settings.ws_impl,
        "loop": settings.loop,
        "ws_max_size": settings.max_message_bytes,
        "ws_per_message_deflate": False,  # video is already compressed (see README)
        "ws_ping_interval": None,  # the protocol has its own heartbeat
        "log_level": settings.log_level,
        "proxy_headers": False,  # client IP: trusted proxies only, handled by the app
        "lifespan": "on",
    }
    return uvicorn.Config(app, **{**options, **overrides})


class Server(uvicorn.Server):
    """uvicorn, but the relay's peers hear ``Disconnect{reason}`` before the sockets close."""

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        state = getattr(self.config.app, "state", None)
        ctx = getattr(state, "ctx", None)
        if ctx is not None:
            await ctx.registry.shutdown(SHUTDOWN_REASON)
        await super().shutdown(sockets)


def serve(app: Any, settings: Settings) -> None:
    """Run until interrupted (``remote-support serve``)."""
    Server(uvicorn_config(app, settings)).run()

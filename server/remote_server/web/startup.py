"""What ``remote-support serve`` says when it starts: a few lines an operator reads.

The version and database kind, the plugin set (``cli.plugin_set``), the app's
own notes, and one line per listener with its scheme. Libraries stay below
INFO: Alembic announces each of its plugins on every start, and uvicorn's
start-up lines repeat what the listener line says.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Iterable

__all__ = ["QUIET_LIBRARIES", "QuietStartup", "database_kind", "log_listeners", "log_start",
           "quiet_libraries"]

log = logging.getLogger("remote_support")

QUIET_LIBRARIES = ("alembic", "botocore")
"""Loggers held at WARNING: their INFO lines are about themselves, not the server."""

_UVICORN_STARTUP = ("Started server process", "Waiting for application startup",
                    "Application startup complete", "Uvicorn running on")


class QuietStartup(logging.Filter):
    """Drops uvicorn's start-up lines (:func:`log_listeners` names the listeners)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name.startswith("uvicorn")
                    and isinstance(record.msg, str) and record.msg.startswith(_UVICORN_STARTUP))


def quiet_libraries() -> None:
    """Hold the chatty libraries' loggers at WARNING."""
    for name in QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(logging.WARNING)


def database_kind(url: str) -> str:
    """``sqlite``, ``postgresql``...: the URL's dialect, never its host, user or password."""
    return url.split("://", 1)[0].split("+", 1)[0].lower() or "unknown"


def log_start(database_url: str) -> None:
    """The version and the database's kind, once the settings have passed their checks."""
    from .. import __version__

    log.info("remote-support %s starting; database: %s", __version__,
             database_kind(database_url))


def log_listeners(servers: Iterable[asyncio.Server], *, secure: bool) -> None:
    """One line per listening socket: ``listening on https://127.0.0.1:8443 (wss:// for
    agents and viewers)``."""
    scheme, ws = ("https", "wss") if secure else ("http", "ws")
    for server in servers:
        for sock in server.sockets:
            if sock.family not in (socket.AF_INET, socket.AF_INET6):
                log.info("listening on %s (%s)", sock.getsockname(), scheme)
                continue
            host, port = sock.getsockname()[:2]
            shown = f"[{host}]" if sock.family == socket.AF_INET6 else host
            log.info("listening on %s://%s:%d (%s:// for agents and viewers)", scheme, shown,
                     port, ws)

"""Running the app under uvicorn as the relay needs it, with a shutdown that says goodbye.

uvicorn's own shutdown closes every WebSocket with 1012 before the app's
lifespan hears of it, so peers would never learn why. :class:`Server` first
lets the registry send every peer ``Disconnect{reason}`` and close its socket,
then hands over to uvicorn.
"""

from __future__ import annotations

import asyncio
import copy
import ctypes
import ctypes.util
import json
import logging
import signal
import socket
import sys
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from remote_core.supportcode import masked

from ..observe.logs import ContextFilter, JsonFormatter
from ..settings import ServerSettings
from .problem import PROBLEM_MEDIA_TYPE
from .problem_types import BY_SLUG
from .startup import QuietStartup, log_listeners, log_start
from .tls import CertificateReloader
from .wsprotocol import RelayWebSocketProtocol

__all__ = ["MAX_HEADER_BYTES", "MAX_HEADER_FIELDS", "SHUTDOWN_REASON", "BoundedH11Protocol",
           "HideQueryStrings", "Server", "log_config", "serve", "tune_allocator",
           "uvicorn_config"]

log = logging.getLogger(__name__)

SHUTDOWN_REASON = "server shutting down"
MAX_HEADER_BYTES = 64 * 1024
"""The request line and all headers of one request, together."""
MAX_HEADER_FIELDS = 100
"""Header fields of one request (the app refuses more: :mod:`.headerbounds`)."""

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_HEAP_BUFFERS = 32 * 1024 * 1024  # glibc's largest mmap threshold; above any frame we accept
_KEEP_FREED = 64 * 1024 * 1024


def tune_allocator() -> bool:
    """Serve frame-sized buffers from glibc's heap and keep up to 64 MiB of it when freed.

    A relay allocates and frees a megabyte or so per frame. With glibc's
    defaults those buffers could end up in fresh ``mmap``s or a heap trimmed
    after each free, and every frame then paid about 50-130 page faults
    (measured with 1 MB frames in ``bench/relay.py``). Returns False where the
    C library is not glibc (nothing to tune).
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    ok = bool(mallopt(_M_MMAP_THRESHOLD, _HEAP_BUFFERS)) and bool(
        mallopt(_M_TRIM_THRESHOLD, _KEEP_FREED))
    if not ok:
        log.warning("could not tune the C allocator for frame-sized buffers")
    return ok


class HideQueryStrings(logging.Filter):
    """Keeps query strings out of uvicorn's request lines (its access log, and the
    ``"WebSocket /ws/viewer?..." 403`` line it writes even for a refused upgrade).

    No credential of this server travels in a URL, but clients that put one
    there (``?token=...``) are common, and the operator's log is no place for
    it: the query is replaced by its length.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(_without_query(arg) for arg in record.args)
        return True


def _without_query(value: object) -> object:
    if isinstance(value, str) and value.startswith("/join/"):
        value = _join_link_masked(value)
    if isinstance(value, str) and value.startswith("/") and "?" in value:
        path, _, query = value.partition("?")
        return f"{path}?[{len(query)} characters not logged]"
    return value


def _join_link_masked(path: str) -> str:
    """A join link (``/join/ABC-DEF-GHJ``) carries a support code: logged masked, as the
    audit log names codes; the page's own assets are logged as they are."""
    rest, mark, query = path[len("/join/"):].partition("?")
    if not rest or rest.endswith((".js", ".css", ".svg")):
        return path
    return f"/join/{masked(rest)}{mark}{query}"


class _Connection(h11.Connection):
    """h11's server connection, remembering why it refused a request."""

    refusal: h11.RemoteProtocolError | None = None

    def next_event(self) -> Any:
        try:
            return super().next_event()
        except h11.RemoteProtocolError as exc:
            self.refusal = exc
            raise


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, but a request line and headers past
    :data:`MAX_HEADER_BYTES` are refused with a 431 problem rather than a plain-text 400."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conn = _Connection(h11.SERVER, MAX_HEADER_BYTES)

    def send_400_response(self, msg: str) -> None:
        refusal = self.conn.refusal if isinstance(self.conn, _Connection) else None
        if refusal is None or refusal.error_status_hint != 431:
            super().send_400_response(msg)
            return
        kind = BY_SLUG["headers-too-large"]
        body = json.dumps({"type": kind.uri, "title": kind.title, "status": 431,
                           "detail": f"the request line and headers pass "
                                     f"{MAX_HEADER_BYTES // 1024} KiB"}).encode()
        headers = [(b"content-type", PROBLEM_MEDIA_TYPE.encode()),
                   (b"cache-control", b"no-store"), (b"connection", b"close")]
        for event in (h11.Response(status_code=431, headers=headers, reason=kind.title),
                      h11.Data(data=body), h11.EndOfMessage()):
            self.transport.write(self.conn.send(event))
        self.transport.close()


def log_config(log_format: str = "text") -> dict[str, Any]:
    """uvicorn's own logging configuration, with :class:`HideQueryStrings`, the log
    context and :class:`QuietStartup` on its handlers, its lines as JSON when
    ``log_format`` says so."""
    config: dict[str, Any] = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    config["filters"] = {"hide_query_strings": {"()": HideQueryStrings},
                         "log_context": {"()": ContextFilter},
                         "quiet_startup": {"()": QuietStartup}}
    for handler in config["handlers"].values():
        handler["filters"] = [*handler.get("filters", []), "hide_query_strings", "log_context",
                              "quiet_startup"]
    if log_format == "json":
        config["formatters"] = {name: {"()": JsonFormatter} for name in config["formatters"]}
    return config


def uvicorn_config(app: Any, settings: ServerSettings, **overrides: Any) -> uvicorn.Config:
    """The one uvicorn configuration of the server (the CLI, tests and benchmarks share it)."""
    options: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        # h11 bounds the request line and headers together (httptools takes a
        # 100 MB header); after the upgrade, WebSockets never pass through it.
        "http": BoundedH11Protocol,
        "h11_max_incomplete_event_size": MAX_HEADER_BYTES,
        # the shipped implementation, answering heartbeats as it reads them (wsprotocol)
        "ws": (RelayWebSocketProtocol if settings.ws_impl == "websockets-sansio"
               else settings.ws_impl),
        "loop": settings.loop,
        "ws_max_size": settings.max_message_bytes,
        "ws_per_message_deflate": False,  # video is already compressed (see README)
        "ws_ping_interval": None,  # the protocol has its own heartbeat
        "log_level": settings.log_level,
        "log_config": log_config(settings.log_format),
        "proxy_headers": False,  # client IP: trusted proxies only, handled by the app
        "lifespan": "on",
    }
    return uvicorn.Config(app, **{**options, **overrides})


class Server(uvicorn.Server):
    """uvicorn, but the relay's peers hear ``Disconnect{reason}`` before the sockets close,
    the listeners are named in one line each, and SIGHUP reloads the TLS certificate."""

    def __init__(self, config: uvicorn.Config, tls: CertificateReloader | None = None) -> None:
        super().__init__(config)
        self.tls = tls
        if tls is not None:
            if not config.loaded:
                config.load()
            config.ssl = tls.context

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        if hasattr(signal, "SIGHUP"):  # before the migrations: a reload then must not kill
            try:
                asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, self.reload)
            # Not the main thread (asyncio: RuntimeError, uvloop: ValueError), or no
            # signals on this platform (NotImplementedError).
            except (NotImplementedError, RuntimeError, ValueError):
                log.debug("SIGHUP is not handled in this process")
        await super().startup(sockets)
        if not self.should_exit:
            log_listeners(self.servers, secure=self.config.ssl is not None)

    def reload(self) -> None:
        """SIGHUP (``systemctl reload``): read the TLS certificate again; without TLS there
        is nothing to reload, and the signal must not end the process as by default."""
        if self.tls is not None:
            self.tls.reload()
        else:
            log.info("SIGHUP: nothing to reload (no tls_cert); settings are read at start")

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """Stop listening first, then tell the peers: a fleet told to reconnect would
        otherwise meet this process still accepting only to refuse them, each refusal
        a socket the shutdown waits for (it ran out its 5 s grace under 2,000 agents),
        where a closed port refuses them at no cost here (and a load balancer sends
        them on to another node)."""
        for server in self.servers:
            server.close()
        state = getattr(self.config.app, "state", None)
        ctx = getattr(state, "ctx", None)
        if ctx is not None:
            await ctx.registry.shutdown(SHUTDOWN_REASON)
        await super().shutdown(sockets)


def serve(app: Any, settings: ServerSettings) -> None:
    """Run until interrupted (``remote-support serve``)."""
    tls = (CertificateReloader(settings.tls_cert, settings.tls_key) if settings.tls_cert
           else None)
    log_start(settings.database_url)
    tune_allocator()
    Server(uvicorn_config(app, settings), tls).run()

"""The server's log lines: text or JSON, each with the context it happened in.

The request, session, agent and viewer a line is about live in context
variables: the request middleware and the relay's socket drivers set them, and
every line logged within (in that task or the tasks it starts) carries them.
The node id is the process's own. Whatever the format, credentials that may
slip into a message (an agent key, a JWT) are masked before the line is written.
"""

from __future__ import annotations

import contextvars
import datetime
import json
import logging
import os
import re
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["AGENT_ID", "REQUEST_ID", "SESSION_ID", "VIEWER_ID", "ContextFilter",
           "JsonFormatter", "RequestIds", "bind_peer", "configure", "mask_secrets", "set_node"]

REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id",
                                                                        default=None)
SESSION_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("session_id",
                                                                        default=None)
AGENT_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("agent_id", default=None)
VIEWER_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("viewer_id",
                                                                       default=None)
_CONTEXT = (("request_id", REQUEST_ID), ("session_id", SESSION_ID), ("agent_id", AGENT_ID),
            ("viewer_id", VIEWER_ID))
_node: str | None = None

_UVICORN_SOURCE = f"{os.sep}uvicorn{os.sep}"


def _debug_written(record: logging.LogRecord) -> bool:
    """Whether a DEBUG line is written: the project's and its plugins', and uvicorn's own.
    Libraries' are not: their debug output dumps frames, headers and queries, credentials
    included (the websockets library logs every frame in hex and every upgrade header
    through uvicorn's logger, so the line's source file decides, not only its logger)."""
    if record.name.startswith("remote_"):
        return True
    return record.name.startswith("uvicorn") and _UVICORN_SOURCE in record.pathname

_EXTRAS = ("event", "client_ip")
"""``extra=`` keys the project's log calls use that belong in a JSON line."""

_SECRETS = re.compile(r"cak_[A-Za-z0-9_-]+|eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")


def set_node(node_id: str | None) -> None:
    """The cluster node this process is (None: the only server)."""
    global _node
    _node = node_id


def bind_peer(*, session_id: str, agent_id: str, viewer_id: str | None = None) -> None:
    """Say which session (and viewer) the current socket task serves, for its lines."""
    SESSION_ID.set(session_id)
    AGENT_ID.set(agent_id)
    if viewer_id is not None:
        VIEWER_ID.set(viewer_id)


def mask_secrets(text: str) -> str:
    """``text`` with agent keys and JWTs replaced by their first characters."""
    return _SECRETS.sub(lambda m: m.group(0)[:4] + "[masked]", text)


class ContextFilter(logging.Filter):
    """Puts the context variables on every record and masks credentials in its message."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.INFO and not _debug_written(record):
            return False
        for name, var in _CONTEXT:
            if not hasattr(record, name):
                setattr(record, name, var.get())
        if not hasattr(record, "node_id"):
            record.node_id = _node
        message = record.getMessage()
        masked = mask_secrets(message)
        if masked != message:
            record.msg, record.args = masked, None
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message and the context that applies."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC)
            .isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in ("request_id", "session_id", "agent_id", "viewer_id", "node_id",
                     *_EXTRAS):
            value = getattr(record, name, None)
            if value is not None:
                line[name] = value
        if record.exc_info:
            line["exception"] = mask_secrets(self.formatException(record.exc_info))
        return json.dumps(line, ensure_ascii=True, default=str)


def configure(level: str, log_format: str) -> None:
    """Set the root handlers' format and context, and the project's loggers' level."""
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):  # "trace" is uvicorn's; ours go to DEBUG
        numeric = logging.DEBUG
    root = logging.getLogger()
    root.setLevel(numeric)
    for handler in root.handlers:
        if not any(isinstance(f, ContextFilter) for f in handler.filters):
            handler.addFilter(ContextFilter())
        if log_format == "json":
            handler.setFormatter(JsonFormatter())


Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class RequestIds:
    """ASGI middleware: each HTTP request and WebSocket gets an id its log lines carry."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        token = REQUEST_ID.set(uuid.uuid4().hex[:16])
        try:
            await self.app(scope, receive, send)
        finally:
            REQUEST_ID.reset(token)

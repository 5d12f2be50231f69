"""The wire protocol with no I/O: bytes in, events out; events in, bytes out.

``pb`` is the generated message module (SPEC section 2), re-exported so the
rest of the project never imports ``remote_core._proto`` directly.
"""

from __future__ import annotations

from ._wire import FIELD_BY_NUMBER, NUMBER_BY_FIELD, pb, peek, wrap
from .connection import DEFAULT_MAX_MESSAGE_BYTES, MAX_CLIPBOARD_BYTES, Connection, State
from .errors import CloseCode, LocalProtocolError, ProtocolError, RemoteProtocolError
from .events import Dropped, Inbound, ProtocolEvent
from .frames import SLOT_NAMES, codec_of, is_keyframe
from .routes import (
    ALLOWED,
    BACKSTAGE_KINDS,
    CHANNEL_KINDS,
    FILE_KINDS,
    INPUT_KINDS,
    RECORDING_ONLY,
    ROUTES,
    Channel,
    Role,
    Route,
    To,
    routes_from,
)

__all__ = [
    "ALLOWED",
    "BACKSTAGE_KINDS",
    "CHANNEL_KINDS",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "FIELD_BY_NUMBER",
    "FILE_KINDS",
    "INPUT_KINDS",
    "MAX_CLIPBOARD_BYTES",
    "NUMBER_BY_FIELD",
    "RECORDING_ONLY",
    "ROUTES",
    "SLOT_NAMES",
    "Channel",
    "CloseCode",
    "Connection",
    "Dropped",
    "Inbound",
    "LocalProtocolError",
    "ProtocolError",
    "ProtocolEvent",
    "RemoteProtocolError",
    "Role",
    "Route",
    "State",
    "To",
    "codec_of",
    "is_keyframe",
    "pb",
    "peek",
    "routes_from",
    "wrap",
]

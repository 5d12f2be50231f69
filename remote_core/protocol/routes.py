"""Where every message kind goes: the one route table of the protocol.

One row per sender role and message kind says where the message goes and
how: to the server itself, to the agent, to the session's viewers (or the
other viewers of the sender), lossy or not, whether it moves while the
session awaits the end user's consent, whether only a viewer with control
may send it, and whether the relay checks the payload or forwards the bytes
as they came (video alone). Rows from ``SERVER`` are what the server itself
originates. Everything else is derived from this table: which kinds each
side may send each other (:data:`ALLOWED`), what a view-only viewer may not
send (:data:`INPUT_KINDS`), and the video fast path. A kind with no row from a
sender is dropped when that sender sends it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["ALLOWED", "BACKSTAGE_KINDS", "CHANNEL_KINDS", "FILE_KINDS", "INPUT_KINDS",
           "RECORDING_ONLY", "ROUTES", "Channel", "Role", "Route", "To", "routes_from"]


class Role(enum.Enum):
    AGENT = "agent"
    VIEWER = "viewer"
    SERVER = "server"


class To(enum.Flag):
    """Destinations of a message."""

    SERVER = enum.auto()
    """The server acts on it itself (a handler of the relay)."""
    AGENT = enum.auto()
    VIEWERS = enum.auto()
    """Every viewer of the session."""
    OTHER_VIEWERS = enum.auto()
    """Every viewer of the session but the sender."""


class Channel(enum.Enum):
    """A viewer's own channel to the agent beside the screen: a session type whose
    messages only that viewer sends and gets, addressed by its viewer id (the server
    stamps it on what the viewer sends and routes what the agent sends by it). The
    value is the permission a technician needs for it."""

    TERMINAL = "backstage"
    """A BACKSTAGE session: a shell on the agent."""
    FILES = "file_transfer"
    """A FILE_TRANSFER session: the agent's files, browsed, downloaded and uploaded."""


@dataclass(frozen=True, slots=True)
class Route:
    to: To
    lossy: bool = False
    """May be dropped for a receiver that lags (its outbox's lossy class)."""
    while_pending: bool = False
    """Moves while the session awaits the end user's consent (else: dropped then)."""
    control_only: bool = False
    """A view-only viewer may not send it (input, and the settings of the shared stream)."""
    forwarded_as_bytes: bool = False
    """Relayed without a parse (video: the hot path; receivers treat garbage as a lost frame)."""
    channel: Channel | None = None
    """A message of a viewer's own channel (a BACKSTAGE terminal, a FILE_TRANSFER): only a
    viewer of that channel sends or gets it, and it goes to one addressee (the agent, or the
    viewer its ``viewer_id`` names), never to every viewer; the server's handlers address
    it."""


_A, _V, _S = Role.AGENT, Role.VIEWER, Role.SERVER
_T, _F = Channel.TERMINAL, Channel.FILES

ROUTES: Mapping[tuple[Role, str], Route] = MappingProxyType({
    # -- from an agent -------------------------------------------------------------------
    (_A, "session_request"): Route(To.SERVER),
    (_A, "heartbeat"): Route(To.SERVER, while_pending=True),
    (_A, "disconnect"): Route(To.SERVER, while_pending=True),
    (_A, "video_frame"): Route(To.VIEWERS, lossy=True, forwarded_as_bytes=True),
    (_A, "cursor_shape"): Route(To.VIEWERS, lossy=True),
    (_A, "cursor_position"): Route(To.VIEWERS, lossy=True),
    (_A, "latency_report"): Route(To.VIEWERS, lossy=True),
    (_A, "clipboard_data"): Route(To.VIEWERS),
    (_A, "chat_message"): Route(To.VIEWERS),
    (_A, "display_info"): Route(To.SERVER | To.VIEWERS, while_pending=True),
    (_A, "agent_status"): Route(To.SERVER, while_pending=True),
    (_A, "update_status"): Route(To.SERVER, while_pending=True),
    (_A, "consent_response"): Route(To.SERVER, while_pending=True),
    (_A, "backstage_data"): Route(To.SERVER, channel=_T),
    (_A, "backstage_close"): Route(To.SERVER, channel=_T),
    (_A, "file_reply"): Route(To.SERVER, channel=_F),
    (_A, "file_data"): Route(To.SERVER, channel=_F),
    (_A, "file_ack"): Route(To.SERVER, channel=_F),
    (_A, "file_close"): Route(To.SERVER, channel=_F),
    # -- from a viewer -------------------------------------------------------------------
    (_V, "session_request"): Route(To.SERVER),
    (_V, "heartbeat"): Route(To.SERVER),
    (_V, "disconnect"): Route(To.SERVER),
    (_V, "video_ack"): Route(To.AGENT, lossy=True),
    (_V, "latency_report"): Route(To.AGENT, lossy=True),
    (_V, "mouse_event"): Route(To.AGENT, control_only=True),
    (_V, "key_event"): Route(To.AGENT, control_only=True),
    (_V, "special_key"): Route(To.AGENT, control_only=True),
    (_V, "clipboard_data"): Route(To.AGENT, control_only=True),
    (_V, "clipboard_request"): Route(To.AGENT),
    (_V, "switch_display"): Route(To.AGENT | To.SERVER, control_only=True),
    (_V, "quality_settings"): Route(To.AGENT, control_only=True),
    (_V, "chat_message"): Route(To.AGENT | To.OTHER_VIEWERS),
    (_V, "backstage_data"): Route(To.SERVER, channel=_T),
    (_V, "backstage_resize"): Route(To.SERVER, channel=_T),
    (_V, "backstage_ack"): Route(To.SERVER, channel=_T),
    (_V, "file_request"): Route(To.SERVER, channel=_F),
    (_V, "file_data"): Route(To.SERVER, channel=_F),
    (_V, "file_ack"): Route(To.SERVER, channel=_F),
    # -- what the server originates ------------------------------------------------------------
    (_S, "session_response"): Route(To.AGENT | To.VIEWERS),
    (_S, "heartbeat_ack"): Route(To.AGENT | To.VIEWERS),
    (_S, "disconnect"): Route(To.AGENT | To.VIEWERS),
    (_S, "start_stream"): Route(To.AGENT),
    (_S, "stop_stream"): Route(To.AGENT),
    (_S, "admin_command"): Route(To.AGENT),
    (_S, "update_info"): Route(To.AGENT),
    (_S, "consent_request"): Route(To.AGENT),
    (_S, "participants"): Route(To.AGENT),
    # a viewer's own channel: the server addresses each one (the viewer's, stamped with its
    # viewer id, to the agent; the agent's to the one viewer it names)
    (_S, "backstage_open"): Route(To.AGENT, channel=_T),
    (_S, "backstage_data"): Route(To.AGENT | To.VIEWERS, channel=_T),
    (_S, "backstage_resize"): Route(To.AGENT, channel=_T),
    (_S, "backstage_ack"): Route(To.AGENT, channel=_T),
    (_S, "backstage_close"): Route(To.AGENT, channel=_T),
    (_S, "file_open"): Route(To.AGENT, channel=_F),
    (_S, "file_request"): Route(To.AGENT, channel=_F),
    (_S, "file_reply"): Route(To.VIEWERS, channel=_F),
    (_S, "file_data"): Route(To.AGENT | To.VIEWERS, channel=_F),
    (_S, "file_ack"): Route(To.AGENT | To.VIEWERS, channel=_F),
    (_S, "file_close"): Route(To.AGENT, channel=_F),
})


RECORDING_ONLY = frozenset({"recording_note"})
"""Kinds only session recordings hold: no row, so nobody sends them on a socket."""


def routes_from(role: Role) -> dict[str, Route]:
    """The rows whose sender is ``role``, by kind."""
    return {kind: route for (sender, kind), route in ROUTES.items() if sender is role}


def _reaching(receiver: To) -> frozenset[str]:
    """What the server sends a peer: what it originates for it and what it relays to it."""
    return frozenset(
        kind for (sender, kind), route in ROUTES.items()
        if receiver & route.to or (receiver is To.VIEWERS and To.OTHER_VIEWERS & route.to
                                   and sender is _V))


ALLOWED: Mapping[tuple[Role, Role], frozenset[str]] = MappingProxyType({
    (_A, _S): frozenset(routes_from(_A)),
    (_V, _S): frozenset(routes_from(_V)),
    (_S, _A): _reaching(To.AGENT),
    (_S, _V): _reaching(To.VIEWERS),
})
"""Which kinds each sender may send each receiver (derived from :data:`ROUTES`)."""

CHANNEL_KINDS: Mapping[Channel, frozenset[str]] = MappingProxyType({
    channel: frozenset(kind for (_, kind), route in ROUTES.items() if route.channel is channel)
    for channel in Channel})
"""The messages of each viewer's channel: its viewer sends only these (and heartbeats and
goodbyes); a screen viewer none of them."""
BACKSTAGE_KINDS = CHANNEL_KINDS[Channel.TERMINAL]
"""The terminal messages of BACKSTAGE sessions."""
FILE_KINDS = CHANNEL_KINDS[Channel.FILES]
"""The messages of FILE_TRANSFER sessions."""

INPUT_KINDS = frozenset(kind for kind, route in routes_from(_V).items() if route.control_only)
"""What a VIEW_ONLY viewer may not send (CONTRACT 1, View-only): dropped by the protocol."""

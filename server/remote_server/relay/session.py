"""One live session: its agent, its viewers, and how messages flow between them.

Routing here is synchronous and never waits: every message is queued in the
receiving peer's outbox, whose policy (``outbox.py``) bounds memory. Video is
forwarded as the bytes the agent sent; only small control payloads the server
itself acts on are ever parsed.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import anyio

from remote_core.protocol import NUMBER_BY_FIELD, Inbound, pb
from remote_core.records import CONSENT_PENDING

from .consent import ConsentBook, Standing
from .link import Link

__all__ = ["KEYFRAME_REQUEST_INTERVAL", "LiveSession", "Session"]

log = logging.getLogger(__name__)

KEYFRAME_REQUEST_INTERVAL = 1.0
"""Seconds between two keyframe requests made on behalf of one lagging viewer."""

VIDEO_FRAME = NUMBER_BY_FIELD["video_frame"]

# Agent -> viewers.
_TO_VIEWERS_LOSSY = frozenset({"cursor_shape", "cursor_position", "latency_report"})
_TO_VIEWERS = frozenset({"clipboard_data", "chat_message"})
# Viewer -> agent; stream-wide settings are for control viewers only.
_STREAM_SETTINGS = frozenset({"switch_display", "quality_settings"})
_TO_AGENT_LOSSY = frozenset({"video_ack", "latency_report"})
_TO_AGENT = frozenset({"mouse_event", "key_event", "special_key", "clipboard_data",
                       "clipboard_request", *_STREAM_SETTINGS})


@dataclass(frozen=True, slots=True)
class LiveSession:
    """A snapshot of a live session for the REST API."""

    session_id: str
    agent_id: str
    consent_state: str
    is_managed: bool
    source: str
    technician_id: str | None
    created_at: datetime
    viewer_count: int
    organization: str
    technician_name: str = ""


class Session:
    """The mutable state of one live session, owned by the registry."""

    def __init__(self, *, session_id: str, agent_id: str, agent: Link, source: str,
                 is_managed: bool, consent_state: str, created_at: datetime,
                 organization: str = "", technician_id: str | None = None,
                 technician_name: str = "", control_consented: bool = True,
                 key_id: str | None = None, machine_uid: str | None = None,
                 support_code: str | None = None) -> None:
        self.session_id = session_id
        self.agent_id = agent_id
        self.agent = agent
        self.source = source
        self.is_managed = is_managed
        self.consent_state = consent_state
        self.created_at = created_at
        self.organization = organization
        self.technician_id = technician_id
        self.technician_name = technician_name
        self.control_consented = control_consented
        self.key_id = key_id
        self.machine_uid = machine_uid
        self.support_code = support_code
        self.viewers: dict[str, Link] = {}
        self.display_info: Any | None = None  # pb.DisplayInfo, the agent's latest report
        self.display_id = 0  # the stream's display, as the last SwitchDisplay set it
        self.ended = False
        self.consent: ConsentBook | None = None  # attended sessions: who the end user admitted
        self.consent_asked = anyio.Event()  # set when a question opens, for the consent timer
        self._told: tuple[tuple[str, bool], ...] = ()  # the participants the agent last heard

    def snapshot(self) -> LiveSession:
        return LiveSession(
            session_id=self.session_id, agent_id=self.agent_id,
            consent_state=self.consent_state, is_managed=self.is_managed, source=self.source,
            technician_id=self.technician_id, created_at=self.created_at,
            viewer_count=len(self.viewers), organization=self.organization,
            technician_name=self.technician_name,
        )

    @property
    def pending(self) -> bool:
        return self.consent_state == CONSENT_PENDING

    def standing(self, user_id: str) -> Standing:
        """Where ``user_id`` stands with this session's end user. Managed sessions need no
        consent; the technician the support code named stands on the session's own consent
        (``pending`` is the caller's to check); anyone else on their own answer."""
        if self.consent is None or self.technician_id is None or user_id == self.technician_id:
            return Standing.ADMITTED
        return self.consent.standing(user_id)

    def control_consented_for(self, user_id: str) -> bool:
        """Whether the end user allowed ``user_id`` to control, not only to view."""
        if self.consent is not None and user_id in self.consent.admitted:
            return self.consent.admitted[user_id]
        return self.control_consented

    def tell_participants(self) -> None:
        """Tell an attended session's agent who is connected now, if that changed.

        One entry per technician (a technician with two viewers is one participant,
        controlling if either may); viewers never receive this.
        """
        if self.is_managed or self.ended:
            return
        control: dict[str, bool] = {}
        for viewer in self.viewers.values():
            name = viewer.actor or "technician"
            control[name] = control.get(name, False) or not viewer.conn.view_only
        now = tuple(sorted(control.items()))
        if now == self._told:
            return
        self._told = now
        self.agent.send("participants", pb.Participants(participants=[
            pb.Participant(name=name, access_mode=pb.CONSENT_CONTROL if may else pb.CONSENT_VIEW)
            for name, may in now]))

    # -- agent -> viewers -----------------------------------------------------------
    def fan_out_video(self, data: bytes, offset: int) -> None:
        """Queue one ``VideoFrame`` for every viewer; ask for a keyframe for one that lags
        (at most once per ``KEYFRAME_REQUEST_INTERVAL`` while it waits)."""
        for viewer in self.viewers.values():
            if viewer.outbox.put_frame(data, offset):
                self.request_keyframe(viewer)

    def request_keyframe(self, viewer: Link) -> None:
        now = time.monotonic()
        if now < viewer.next_keyframe_request:
            return
        viewer.next_keyframe_request = now + KEYFRAME_REQUEST_INTERVAL
        self.agent.send("start_stream", pb.StartStream(viewer_id=viewer.id,
                                                       display_id=self.display_id))

    def from_agent(self, event: Inbound) -> bool:
        """Relay what the agent sent to the viewers; False if the kind is not relayed.

        :raises RemoteProtocolError: (1007) the payload does not parse.
        """
        if event.kind in _TO_VIEWERS_LOSSY:
            data = _parsable(event)
            for viewer in self.viewers.values():
                viewer.forward(data, lossy=True)
        elif event.kind in _TO_VIEWERS:
            data = _parsable(event)
            for viewer in self.viewers.values():
                viewer.forward(data)
        else:
            return False
        return True

    def set_display_info(self, event: Inbound) -> None:
        self.display_info = event.payload()
        for viewer in self.viewers.values():
            viewer.forward(event.data)

    # -- viewers -> agent ------------------------------------------------------------
    def from_viewer(self, viewer: Link, event: Inbound) -> str | None:
        """Relay what a viewer sent; return why it was dropped, or None if relayed.

        :raises RemoteProtocolError: (1007) the payload does not parse.
        """
        kind = event.kind
        if kind in _TO_AGENT_LOSSY:
            self.agent.forward(_parsable(event), lossy=True)
        elif kind in _TO_AGENT:
            if kind in _STREAM_SETTINGS:
                if viewer.conn.view_only:
                    return "view-only viewers do not change the shared stream"
                if kind == "switch_display":
                    self.display_id = event.payload().display_id
            self.agent.forward(_parsable(event))
        elif kind == "chat_message":
            data = _parsable(event)
            self.agent.forward(data)
            for other in self.viewers.values():
                if other is not viewer:
                    other.forward(data)
        else:
            return f"a viewer's {kind} is not relayed"
        return None


def _parsable(event: Inbound) -> bytes:
    """``event.data``, once its payload is known to parse.

    The framing peek reads only the outer tag, so a message's inner bytes could be
    anything; relayed unchecked, they would break the receiving agent or viewer
    instead of the sender's own socket. Video is the one exception, forwarded as it
    came (the relay's hot path; viewers treat a frame that does not decode as lost).

    :raises RemoteProtocolError: (1007) they do not.
    """
    event.payload()
    return event.data

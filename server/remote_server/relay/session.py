"""One live session: its agent, its viewers, and how messages flow between them.

Where a message goes is the protocol's route table (``remote_core.protocol.ROUTES``);
:meth:`Session.relay` only carries it out. Routing here is synchronous and never
waits: every message is queued in the receiving peer's outbox, whose policy
(``outbox.py``) bounds memory. Video is forwarded as the bytes the agent sent;
every other relayed payload is first checked to parse.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime

import anyio

from remote_core.protocol import ROUTES, Channel, Inbound, Role, To, codec_of, is_keyframe, pb
from remote_core.records import CONSENT_PENDING, DEFAULT_TENANT_ID, MachineReport

from ..observe.counters import RELAY
from .consent import Ask, ConsentBook, Standing
from .link import Link
from .recorder import SessionRecorder

__all__ = ["KEYFRAME_REQUEST_INTERVAL", "Session", "SessionSnapshot"]

log = logging.getLogger(__name__)

UNRECORDED = frozenset({"video_ack", "latency_report"})
"""Relayed kinds a recording leaves out: flow control and timing, nothing anyone did."""

KEYFRAME_REQUEST_INTERVAL = 1.0
"""Seconds between two keyframe requests made on behalf of one lagging viewer."""

@dataclass(frozen=True, slots=True)
class SessionSnapshot:
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
    tenant_id: str = DEFAULT_TENANT_ID


class Session:
    """The mutable state of one live session, owned by the registry."""

    def __init__(self, *, session_id: str, agent_id: str, agent: Link, source: str,
                 is_managed: bool, consent_state: str, created_at: datetime,
                 organization: str = "", technician_id: str | None = None,
                 technician_name: str = "", control_consented: bool = True,
                 key_id: str | None = None, machine_uid: str | None = None,
                 support_code: str | None = None, session_panel: bool = False,
                 tenant_id: str = DEFAULT_TENANT_ID) -> None:
        self.session_id = session_id
        self.tenant_id = tenant_id
        """The machine's tenant: only its users see or join the session."""
        self.agent_id = agent_id
        self.agent = agent
        self.source = source
        self.is_managed = is_managed
        self.consent_state = consent_state
        self.created_at = created_at
        self.organization = organization
        self.technician_id = technician_id
        self.technician_name = technician_name
        self.recorded = False
        """Whether the session is recorded: the end user's consent dialog says so."""
        self.recorder: SessionRecorder | None = None
        """Records what is relayed while technicians watch (recordings on)."""
        self.session_panel = session_panel
        """The end user sees the session panel (``rules.shows_session_panel``): the agent is
        told so in ``StartStream`` and told who is connected."""
        self.control_consented = control_consented
        self.key_id = key_id
        self.machine_uid = machine_uid
        self.support_code = support_code
        self.viewers: dict[str, Link] = {}
        self.channels: dict[str, Link] = {}
        """Viewers of their own channel (a BACKSTAGE shell, a FILE_TRANSFER), by viewer id
        (``link.conn.channel`` says which): kept apart from :attr:`viewers`, so nothing
        relayed to the screen's viewers reaches them."""
        self.display_info: pb.DisplayInfo | None = None  # the agent's latest report
        self.display_id = 0  # the stream's display, as the last SwitchDisplay set it
        self.ended = False
        self.consent: ConsentBook | None = None  # attended sessions: who the end user admitted
        self.consent_asked = anyio.Event()  # set when a question opens, for the consent timer
        # the participants told, and whether a recording ran then
        self._told: tuple[tuple[tuple[str, bool, bool, bool], ...], bool] = ((), False)
        self.reported: MachineReport | None = None  # the agent's last report, as written

    def snapshot_key(self) -> tuple[str, int, str, str]:
        """What of :meth:`snapshot` changes while the session lives: compared before a
        snapshot is made, so an unchanged session costs a tuple, not a snapshot."""
        return self.consent_state, len(self.viewers), self.organization, self.technician_name

    def snapshot(self) -> SessionSnapshot:
        return SessionSnapshot(
            session_id=self.session_id, agent_id=self.agent_id,
            consent_state=self.consent_state, is_managed=self.is_managed, source=self.source,
            technician_id=self.technician_id, created_at=self.created_at,
            viewer_count=len(self.viewers), organization=self.organization,
            technician_name=self.technician_name, tenant_id=self.tenant_id,
        )

    @property
    def pending(self) -> bool:
        return self.consent_state == CONSENT_PENDING

    def standing(self, user_id: str, *, channel: Channel | None = None) -> Standing:
        """Where ``user_id`` stands with this session's end user. Managed sessions need no
        consent; the technician the support code named stands on the session's own consent
        (``pending`` is the caller's to check); anyone else on their own answer. For a
        ``channel`` (a terminal, files) everyone stands on their own answer (the consent to
        the session is not consent to a shell or to files); on managed sessions the policy
        decides."""
        if self.consent is None:
            return Standing.ADMITTED
        if channel is not None:
            return self.consent.standing(user_id, channel=channel)
        if self.technician_id is None or user_id == self.technician_id:
            return Standing.ADMITTED
        return self.consent.standing(user_id)

    def control_consented_for(self, user_id: str) -> bool:
        """Whether the end user allowed ``user_id`` to control, not only to view."""
        if self.consent is not None and user_id in self.consent.admitted:
            return self.consent.admitted[user_id]
        return self.control_consented

    def ask(self, ask: Ask, dialog_secs: int) -> None:
        """Queue a question for the end user; it goes out when no other is open."""
        assert self.consent is not None
        self.consent.queue(ask)
        self.ask_next(dialog_secs)

    def ask_next(self, dialog_secs: int) -> None:
        """Send the next queued question, if none is open (one at a time: see consent.py)."""
        assert self.consent is not None
        ask = self.consent.next()
        if ask is None or self.ended:
            return
        self.agent.send("consent_request", pb.ConsentRequest(
            session_id=self.session_id, technician_name=ask.name,
            access_mode=pb.CONSENT_CONTROL if ask.control else pb.CONSENT_VIEW,
            timeout_secs=dialog_secs, organization=self.organization,
            recorded=self.recorded, backstage=ask.channel is Channel.TERMINAL,
            file_transfer=ask.channel is Channel.FILES))
        self.consent_asked.set()

    def tell_participants(self) -> None:
        """Tell the agent who is connected now, if that changed, when its end user's session
        panel shows (every attended session; managed ones as the policy says).

        One entry per technician (a technician with two viewers is one participant,
        controlling if either may); viewers never receive this.
        """
        if not self.session_panel or self.ended:
            return
        control: dict[str, bool] = {}
        for viewer in self.viewers.values():
            name = viewer.actor or "technician"
            control[name] = control.get(name, False) or not viewer.conn.view_only
        opened = {channel: {viewer.actor or "technician" for viewer in self.channels.values()
                            if viewer.conn.channel is channel} for channel in Channel}
        terminals, files = opened[Channel.TERMINAL], opened[Channel.FILES]
        now = tuple(sorted((name, control.get(name, False), name in terminals, name in files)
                           for name in control.keys() | terminals | files))
        recording = self.recorder is not None and self.recorder.current is not None
        if (now, recording) == self._told:
            return
        self._told = (now, recording)
        self.agent.send("participants", pb.Participants(participants=[
            pb.Participant(name=name, access_mode=pb.CONSENT_CONTROL if may else pb.CONSENT_VIEW,
                           backstage=shell, file_transfer=moves_files)
            for name, may, shell, moves_files in now], recording=recording))

    # -- agent -> viewers -----------------------------------------------------------
    def fan_out_video(self, data: bytes, offset: int) -> None:
        """Queue one ``VideoFrame`` for every viewer that decodes its codec; ask for a
        keyframe for one that lags or was passed over, or when a recording's segment is
        full (at most once per ``KEYFRAME_REQUEST_INTERVAL`` while it waits)."""
        RELAY.frames_in += 1
        RELAY.bytes_in += len(data)
        if not self.viewers:
            return
        if self.recorder is not None:
            self.recorder.add(data, keyframe=is_keyframe(data, offset))
            if self.recorder.wants_keyframe():  # the next segment starts at one: seekable
                self.request_keyframe(next(iter(self.viewers.values())))
        codec = codec_of(data, offset)  # read once, from the tags only
        for viewer in self.viewers.values():
            if viewer.outbox.put_frame(data, offset, decodable=viewer.decodes(codec)):
                self.request_keyframe(viewer)

    def start_stream(self, viewer: Link) -> None:
        """Tell the agent ``viewer`` watches (and which codecs it decodes): it answers
        with a keyframe in a codec every viewer decodes."""
        self.agent.send("start_stream", pb.StartStream(
            viewer_id=viewer.id, display_id=self.display_id, codecs=viewer.codecs,
            session_panel=self.session_panel))

    def request_keyframe(self, viewer: Link) -> None:
        now = time.monotonic()
        if now < viewer.next_keyframe_request:
            return
        viewer.next_keyframe_request = now + KEYFRAME_REQUEST_INTERVAL
        self.start_stream(viewer)

    # -- relaying ----------------------------------------------------------------------
    def relay(self, sender: Link, event: Inbound) -> str | None:
        """Pass what ``sender`` (the agent or a viewer) sent on, as the route table says;
        return why it was not, or None. What the table sends to the server itself is the
        caller's to act on (the registry's handler tables).

        :raises RemoteProtocolError: (1007) a relayed payload does not parse.
        """
        role = Role.AGENT if sender is self.agent else Role.VIEWER
        route = ROUTES.get((role, event.kind))
        if route is None:
            return f"a {role.value}'s {event.kind} is not relayed"
        if self.pending and not route.while_pending:
            return "the session awaits consent: nothing is relayed"
        if route.forwarded_as_bytes:  # video that missed the fast path (non-canonical bytes)
            self.fan_out_video(event.data, event.offset)
            return None
        if not route.to & (To.AGENT | To.VIEWERS | To.OTHER_VIEWERS):
            return None
        data = _parsable(event)
        if self.recorder is not None and event.kind not in UNRECORDED:
            self.recorder.add(data, typed=event.kind == "key_event")
        if route.to & To.AGENT and role is Role.VIEWER:
            self.agent.forward(data, lossy=route.lossy)
        if route.to & To.VIEWERS or (route.to & To.OTHER_VIEWERS and role is Role.VIEWER):
            for viewer in self.viewers.values():
                if viewer is not sender:
                    viewer.forward(data, lossy=route.lossy)
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

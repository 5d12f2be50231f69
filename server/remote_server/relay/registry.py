"""The life of live sessions in one server process, and the operators' way to them.

Three parts, each with one job: :class:`~.index.SessionIndex` holds who is
connected (synchronous; the part a multi-node deployment replaces),
:class:`~.admission.Admission` decides who gets in, and the :class:`Registry`
here acts on the messages the route table sends to the server (handler
tables), runs consent answers and timeouts (SPEC 3.1), applies changes to a
user's standing, carries out operator actions, and ends sessions on every path
(peer gone, consent denied or timed out, operator removal, key revocation,
shutdown) by one method, :meth:`Registry._end`. The REST API sees it only as a
:class:`~.directory.SessionDirectory`.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from functools import partial
from typing import Any

import anyio

from remote_core.interfaces import RecordingStore, Store
from remote_core.plugins import Plugins
from remote_core.protocol import Channel, CloseCode, Inbound, Role, pb
from remote_core.protocol.backstage import MAX_CHUNK, WindowError, size_refusal
from remote_core.protocol.files import CHUNK as FILE_CHUNK
from remote_core.records import (
    CONSENT_GRANTED,
    AuditEvent,
    MachineReport,
    SessionRecord,
    utcnow,
)
from remote_core.textrules import escaped

from ..settings import ServerSettings
from .admission import Admission, write_all_offline, write_offline
from .audit import Audit
from .consent import Ask, Standing
from .index import SessionIndex
from .link import Link
from .recorder import NOTE_NAME, recording_detail
from .rules import (
    CLOSED,
    can_control,
    channel_refusal,
    shows_session_panel,
    status_report,
    update_status_detail,
    viewing_refusal,
)
from .session import Session, SessionSnapshot
from .silence import SilenceWatch
from .transfers import Ended, Transfer, TransferBook, TransferError

__all__ = ["HANDLERS", "Handler", "Registry"]

log = logging.getLogger(__name__)

_SHUTDOWN_GRACE = 5.0
SHUTDOWN_KEY = "shutdown"
"""The write-queue key of the writes that end every session at once, in order."""
SEEN_EVERY = 30.0
"""Seconds between the batched writes of when idle machines were last heard from."""


class Registry:
    """Live sessions and the identity indexes, for one server process."""

    def __init__(self, *, settings: ServerSettings, store: Store, plugins: Plugins,
                 audit: Audit, recordings: RecordingStore | None = None) -> None:
        self.settings = settings
        self.store = store
        self.recordings = recordings
        """Where sessions are recorded; None while recordings are off."""
        self.plugins = plugins
        self.audit = audit
        self.writes = audit.writes  # one queue: writes that must survive a database outage
        self.index = SessionIndex()
        self._admission = Admission(settings=settings, store=store, plugins=plugins, audit=audit,
                                    index=self.index, end=self._end, recordings=recordings)
        self._sockets = 0
        self._no_sockets = anyio.Event()
        self._no_sockets.set()
        self._seen: dict[str, datetime] = {}  # agents heard from, not yet written
        self.silence = SilenceWatch(settings.heartbeat_timeout)
        """Closes silent sockets; its :meth:`~SilenceWatch.run` runs beside :meth:`keep_seen`."""

    # -- start-up --------------------------------------------------------------------------
    async def restore(self, *, sole: bool = True) -> None:
        """Index the stored machines; keyed ones are never indexed by uid (SPEC 5.2).

        :param sole: this process is the only server: nothing is live anywhere, so every
            session still open in the database was left by a server that died (SIGKILL,
            power loss) and is closed, every machine offline. A cluster node leaves that
            to the cluster, which knows what the other nodes hold.

        Raises whatever the store raises: a failed restore stops start-up (fail closed).
        """
        result = await self.store.restore_machines()
        self.index.restore_uids(
            (m.machine_uid, m.agent_id) for m in result.machines
            if m.machine_uid and m.agent_id not in result.keyed_agent_ids)
        offline = ended = 0
        if sole:
            offline = await self.store.set_all_machines_offline()
            ended = await self.store.end_open_sessions("the server stopped", utcnow())
            await self.store.end_open_recordings("the server stopped before it ended",
                                                 utcnow())
        log.info("registry restored %d machines (%d keyed); %d left online and %d sessions "
                 "left open by the previous run closed", len(result.machines),
                 len(result.keyed_agent_ids), offline, ended)

    async def keep_seen(self, every: float = SEEN_EVERY) -> None:
        """Write when the agents whose reports brought nothing new were last heard from,
        every ``every`` seconds in one write (no database work per agent and report)."""
        while True:
            await anyio.sleep(every)
            seen, self._seen = self._seen, {}
            if seen:
                await self.writes.submit(("machines", "seen"), "when machines were last seen",
                                         partial(self.store.set_machines_seen, seen))

    # -- queries ---------------------------------------------------------------------------
    def live_sessions(self) -> list[SessionSnapshot]:
        return [s.snapshot() for s in self.index.sessions()]

    def session(self, session_id: str) -> SessionSnapshot | None:
        found = self.index.get(session_id)
        return found.snapshot() if found is not None else None

    def session_for_agent(self, agent_id: str) -> SessionSnapshot | None:
        found = self.index.for_agent(agent_id)
        return found.snapshot() if found is not None else None

    def is_online(self, agent_id: str) -> bool:
        return self.index.for_agent(agent_id) is not None

    def owner(self, session_id: str) -> str | None:
        return None  # one process: no nodes to tell apart

    def live(self, session_id: str) -> Session | None:
        """The mutable session (relay internals only)."""
        return self.index.get(session_id)

    def agent_for_uid(self, machine_uid: str) -> str | None:
        return self.index.uids.get(machine_uid)

    # -- agents ----------------------------------------------------------------------------
    @property
    def agents_waiting(self) -> int:
        """Agents waiting for their turn to be admitted (a storm in progress)."""
        return self._admission.agents_waiting

    async def open_agent(self, request: Any, *, client_ip: str | None = None,
                         machine_uid: str | None = None) -> Session:
        """Authenticate an agent's ``SessionRequest`` and open its session (:class:`Admission`).

        :raises SessionRefused: with the reason to show the agent.
        """
        return await self._admission.open_agent(request, client_ip=client_ip,
                                           machine_uid=machine_uid)

    async def consent_timer(self, session: Session) -> None:
        """Answer for an end user who does not (SPEC 3.1), for the attended session's life: an
        open question past its time is a timeout. The server waits 2 s past the agent's own
        dialog (``ConsentBook.timeout``), so the dialog's answer normally comes first."""
        book = session.consent
        if book is None:
            return
        while not session.ended:
            asked = session.consent_asked = anyio.Event()
            if book.deadline is None:
                await asked.wait()
                continue
            await anyio.sleep(max(0.0, book.deadline - time.monotonic()))
            expired = book.expire()
            if expired is not None and not session.ended:
                await self._consent_timed_out(session, expired)

    async def _consent_timed_out(self, session: Session, ask: Ask) -> None:
        assert session.consent is not None
        session.consent.refuse(ask, Standing.TIMED_OUT)  # before any await: never "unasked"
        await self.audit.record(AuditEvent("session.consent_timeout", session_id=session.session_id,
                                           agent_id=session.agent_id,
                                           detail={"technician": ask.name}))
        if ask.first:
            await self._end(session, "consent timed out")
            return
        log.info("consent for %s to join session %s timed out", ask.name, session.session_id)
        session.ask_next(self.settings.consent_timeout)

    async def _agent_status(self, session: Session, status: Any) -> None:
        """Store what the agent reports. Placement (organization, site, tags) is the
        operator's: a report fills it only where none is assigned (the store's rule), and
        what it does fill is audited, so one endpoint cannot move itself elsewhere.

        Through the write queue: a report the database cannot take now is written when it
        can, the machine's newest report replacing older ones still waiting."""
        report, refused = status_report(session.agent_id, status)
        if refused:
            log.warning("agent %s reported %s breaking the text rule (control characters, "
                        "or too long); ignored", session.agent_id, ", ".join(refused))
        if self._alive(session, report):
            return
        session.reported = report
        await self.writes.submit(("machine", session.agent_id),
                                 f"status report of machine {session.agent_id}",
                                 partial(self._write_status, session, report), coalesce=True)

    def status_heard(self, session: Session, status: Any) -> bool:
        """Take a status report that says nothing new where the socket reads it (True);
        False leaves it to the reader's full path. An idle fleet's reports are nearly all
        the same as the last one written."""
        report, refused = status_report(session.agent_id, status)
        return not refused and self._alive(session, report)

    def _alive(self, session: Session, report: MachineReport) -> bool:
        """Whether ``report`` is the one last written: then it says only that the machine
        is alive, which the next batched last-seen write records."""
        if report != session.reported:
            return False
        self._seen[session.agent_id] = utcnow()
        return True

    async def _write_status(self, session: Session, report: MachineReport) -> None:
        """Runs now or after an outage: the machine's state is what it is when it runs.

        The stored row is read first only where it matters: to audit the placement a
        report fills in, and to keep a machine removed meanwhile removed (an agent's
        first report comes with every admission: one round trip fewer in a storm)."""
        places = bool(report.organization or report.site or report.tags)
        before = (await self.store.get_machine(session.agent_id)
                  if places or session.ended else None)
        if before is None and session.ended:
            return  # removed meanwhile: a late report must not bring it back
        online = self.is_online(session.agent_id)
        machine = await self.store.upsert_machine(
            dataclasses.replace(report, status="online" if online else "offline"))
        session.organization = machine.organization
        # the policy is the machine's organization's; a panel once shown is never taken away
        session.session_panel = session.session_panel or shows_session_panel(
            self.settings, managed=session.is_managed, organization=machine.organization)
        placed = {name: getattr(machine, name) for name in ("organization", "site", "tags")
                  if before is not None and getattr(before, name) != getattr(machine, name)}
        if placed:
            await self.audit.record(AuditEvent(
                "machine.placement_reported", session_id=session.session_id,
                agent_id=session.agent_id, detail={k: v if isinstance(v, str) else list(v)
                                                        for k, v in placed.items()}))

    async def on_agent_message(self, session: Session, event: Inbound) -> str | None:
        """Relay a message from the agent as the route table says, and act on it where the
        table sends it to the server; return why it was dropped, if it was."""
        return await self._dispatch(session, session.agent, event, _FROM_AGENT)

    async def on_viewer_message(self, session: Session, viewer: Link,
                                event: Inbound) -> str | None:
        """The same for a message from one of the session's viewers."""
        return await self._dispatch(session, viewer, event, _FROM_VIEWER)

    async def _dispatch(self, session: Session, sender: Link, event: Inbound,
                        handlers: Mapping[str, Handler]) -> str | None:
        why = session.relay(sender, event)
        if why is not None:
            return why
        handler = handlers.get(event.kind)
        return None if handler is None else await handler(self, session, sender, event)

    async def _on_display_info(self, session: Session, _sender: Link,
                               event: Inbound) -> str | None:
        session.display_info = event.payload()  # what a viewer joining later is answered
        return None

    async def _on_agent_status(self, session: Session, _sender: Link,
                               event: Inbound) -> str | None:
        await self._agent_status(session, event.payload())
        return None

    async def _on_update_status(self, session: Session, _sender: Link,
                                event: Inbound) -> str | None:
        await self.audit.record(AuditEvent("agent.update_status", session_id=session.session_id,
                                           agent_id=session.agent_id,
                                           detail=update_status_detail(event.payload())))
        return None

    async def _on_consent_response(self, session: Session, _sender: Link,
                                   event: Inbound) -> str | None:
        return await self._consent_response(session, event.payload())

    async def _on_switch_display(self, session: Session, _sender: Link,
                                 event: Inbound) -> str | None:
        session.display_id = event.payload().display_id  # keyframes requested for it
        return None

    async def _consent_response(self, session: Session, response: Any) -> str | None:
        if response.session_id and response.session_id != session.session_id:
            return "consent_response for another session"
        ask = session.consent.answered() if session.consent is not None else None
        if ask is None:
            return "consent was not asked (or was already given up on)"
        if response.granted:
            await self._consent_granted(session, ask)
        else:
            assert session.consent is not None
            session.consent.refuse(ask, Standing.DENIED)  # before any await: never "unasked"
            reason = escaped(response.reason)
            await self.audit.record(AuditEvent(
                "session.consent_denied", session_id=session.session_id,
                agent_id=session.agent_id,
                detail={"by": "end user", "reason": reason, "technician": ask.name,
                        **_asked_for(ask)}))
            if ask.first:
                await self._end(session, "consent denied" + (f": {reason}" if reason else ""))
                return None
            log.info("consent for %s to join session %s denied", ask.name, session.session_id)
        session.ask_next(self.settings.consent_timeout)
        return None

    async def _consent_granted(self, session: Session, ask: Ask) -> None:
        if ask.first:
            session.consent_state = CONSENT_GRANTED
            self.index.touch(session)
            await self.store.update_session(session.session_id, consent_state=CONSENT_GRANTED)
        else:
            assert session.consent is not None
            session.consent.admit(ask)
        await self.audit.record(AuditEvent("session.consent_granted", session_id=session.session_id,
                                           agent_id=session.agent_id,
                                           detail={"technician": ask.name,
                                                   **_asked_for(ask)}))
        log.info("consent granted to %s for session %s", ask.name, session.session_id)

    # -- backstage terminals -----------------------------------------------------------------
    async def _on_terminal_input(self, session: Session, sender: Link,
                                 event: Inbound) -> str | None:
        """A backstage viewer's keystrokes, size or acknowledgement: checked, stamped with
        its viewer id (whatever it wrote there) and passed to the agent."""
        if session.channels.get(sender.id) is not sender or sender.window is None:
            return "not a backstage viewer of this session"
        message = event.payload()
        if event.kind == "backstage_data" and len(message.data) > MAX_CHUNK:
            return f"{len(message.data)} bytes of terminal input; at most {MAX_CHUNK} at once"
        if event.kind == "backstage_resize":
            refusal = size_refusal(message.rows, message.cols)
            if refusal is not None:
                return refusal
        if event.kind == "backstage_ack":
            try:
                sender.window.acked(message.bytes)
            except WindowError as exc:
                return str(exc)
        message.viewer_id = sender.id
        if event.kind == "backstage_data" and session.recorder is not None:
            session.recorder.note("terminal_input", sender.actor, sender.id, data=message.data)
        if event.kind == "backstage_data":
            # Input waits (and so does this viewer's socket) while the agent's outbox is
            # half full: a huge paste slows its sender, never closes the agent.
            await session.agent.outbox.wait_room(session.agent.outbox.budget // 2)
            if session.ended or session.channels.get(sender.id) is not sender:
                return "the terminal ended while its input waited"
        session.agent.send(event.kind, message)
        return None

    async def _on_terminal_output(self, session: Session, _sender: Link,
                                  event: Inbound) -> str | None:
        """The agent's terminal output, to the one backstage viewer it names, within the
        flow-control window (an agent that overruns it loses that terminal)."""
        message = event.payload()
        viewer = session.channels.get(message.viewer_id)
        if viewer is None or viewer.window is None:
            return "terminal output for no backstage viewer of this session"
        if len(message.data) > MAX_CHUNK:
            return f"{len(message.data)} bytes of terminal output; at most {MAX_CHUNK} at once"
        try:
            viewer.window.sent(len(message.data))
        except WindowError as exc:
            await self.leave_viewer(session, viewer, f"the agent broke the terminal's flow "
                                                     f"control: {exc}",
                                    code=CloseCode.NORMAL)
            return None
        viewer.forward(event.data)
        if session.recorder is not None:
            session.recorder.add(event.data)  # what the technician saw
        return None

    async def _on_terminal_closed(self, session: Session, _sender: Link,
                                  event: Inbound) -> str | None:
        """The agent's shell ended (or never started): its viewer is closed, saying why."""
        message = event.payload()
        viewer = session.channels.get(message.viewer_id)
        if viewer is None or viewer.conn.channel is not Channel.TERMINAL:
            return None  # the viewer left first: its close crossed the agent's
        reason = escaped(message.reason, 200) or f"the shell exited with status {message.exit_code}"
        await self.leave_viewer(session, viewer, reason, notified=True)
        return None

    # -- file transfers ----------------------------------------------------------------------
    def _file_viewer(self, session: Session, viewer_id: str) -> tuple[Link, TransferBook] | None:
        viewer = session.channels.get(viewer_id)
        if viewer is None or viewer.transfers is None:
            return None
        return viewer, viewer.transfers

    async def _on_file_request(self, session: Session, sender: Link,
                               event: Inbound) -> str | None:
        """A file viewer's request: checked against the server's rules and cap (refused
        here with a ``FileReply`` of its own), stamped with its viewer id, sent on."""
        found = self._file_viewer(session, sender.id)
        if found is None or found[0] is not sender:
            return "not a file viewer of this session"
        message = event.payload()
        try:
            found[1].request(message)
        except TransferError as exc:
            sender.send("file_reply", pb.FileReply(
                request_id=message.request_id, error=exc.code, message=str(exc), done=True,
                path=message.path))
            await self._audit_transfer(session, sender, Ended(Transfer(
                message.request_id, message.op, message.path, size=message.size),
                exc.code, str(exc)))
            return None
        message.viewer_id = sender.id
        session.agent.send(event.kind, message)
        return None

    async def _on_file_viewer_data(self, session: Session, sender: Link,
                                   event: Inbound) -> str | None:
        """An upload's chunk or a download's acknowledgement from its viewer: checked,
        stamped, sent on. A viewer that breaks the window or the declared size loses the
        channel (its upload could only fail at the agent)."""
        found = self._file_viewer(session, sender.id)
        if found is None or found[0] is not sender:
            return "not a file viewer of this session"
        message = event.payload()
        try:
            if event.kind == "file_data":
                found[1].viewer_data(message)
            else:
                found[1].viewer_ack(message)
        except TransferError as exc:
            if exc.code == "not-found":
                return str(exc)  # a transfer that just ended: a late ack crossed its end
            await self.leave_viewer(session, sender, f"the viewer broke the file transfer's "
                                                     f"rules: {exc}",
                                    code=CloseCode.POLICY_VIOLATION)
            return None
        message.viewer_id = sender.id
        if event.kind == "file_data":
            # An upload's chunk waits (and so does this viewer's socket) until at most one
            # chunk is queued for the agent: the screen's acknowledgements and the
            # technicians' input never queue behind more than that.
            await session.agent.outbox.wait_room(FILE_CHUNK)
            if session.ended or session.channels.get(sender.id) is not sender:
                return "the file viewer left while its upload waited"
        session.agent.send(event.kind, message)
        return None

    async def _on_file_agent(self, session: Session, _sender: Link,
                             event: Inbound) -> str | None:
        """The agent's reply, download chunk or upload acknowledgement, to the one file
        viewer it names, checked on the way; a transfer's end is audited. A download past
        the server's cap is cancelled at the agent and refused to the viewer; an agent that
        breaks the window loses that channel."""
        message = event.payload()
        found = self._file_viewer(session, message.viewer_id)
        if found is None:
            return f"{event.kind} for no file viewer of this session"
        viewer, book = found
        try:
            ended = None
            if event.kind == "file_reply":
                ended = book.reply(message)
            elif event.kind == "file_data":
                ended = book.agent_data(message)
            else:
                book.agent_ack(message)
        except TransferError as exc:
            if exc.code == "not-found":
                return str(exc)  # a transfer this server already ended (cancelled, refused)
            if exc.code != "too-large":
                await self.leave_viewer(session, viewer, f"the agent broke the file transfer's "
                                                         f"rules: {exc}")
                return None
            session.agent.send("file_request", pb.FileRequest(
                viewer_id=viewer.id, request_id=message.request_id, op=pb.FILE_OP_CANCEL))
            viewer.send("file_reply", pb.FileReply(
                request_id=message.request_id, error=exc.code, message=str(exc), done=True))
            await self._audit_transfer(session, viewer, Ended(
                Transfer(message.request_id, pb.FILE_OP_DOWNLOAD, ""), exc.code, str(exc)))
            return None
        viewer.forward(event.data)
        if ended is not None:
            await self._audit_transfer(session, viewer, ended)
        return None

    async def _on_file_closed(self, session: Session, _sender: Link,
                              event: Inbound) -> str | None:
        """The agent closes a file viewer's channel: the viewer is closed, saying why."""
        message = event.payload()
        found = self._file_viewer(session, message.viewer_id)
        if found is None:
            return None  # the viewer left first
        await self.leave_viewer(session, found[0], escaped(message.reason, 200)
                                or "the agent closed the file transfer", notified=True)
        return None

    async def _audit_transfer(self, session: Session, viewer: Link, ended: Ended) -> None:
        """The audit row of a transfer that ended: who moved what, or why it did not move."""
        transfer = ended.transfer
        if transfer.op not in (pb.FILE_OP_UPLOAD, pb.FILE_OP_DOWNLOAD, pb.FILE_OP_MKDIR):
            return  # listings are browsing, not moving
        kind = "file.failed" if ended.error else _MOVED[transfer.op]
        detail: dict[str, Any] = {"viewer_id": viewer.id, "technician": viewer.actor,
                                  "path": escaped(transfer.path, 1000),
                                  "direction": transfer.direction}
        if transfer.op == pb.FILE_OP_MKDIR:
            detail.pop("direction")
        elif not ended.error:
            detail.update(size=ended.bytes, sha256=escaped(ended.sha256, 64),
                          resumed_at=transfer.offset)
        if ended.error:
            detail.update(error=escaped(ended.error, 40), message=escaped(ended.message, 300))
        if session.recorder is not None:
            session.recorder.note("file", viewer.actor, viewer.id,
                                  text=ended.text())
        await self.audit.record(AuditEvent(
            kind, session_id=session.session_id, agent_id=session.agent_id,
            actor=viewer.actor, client_ip=viewer.client_ip, detail=detail))

    async def agent_gone(self, session: Session, reason: str) -> None:
        """The agent's socket ended (closed, failed or timed out)."""
        await self._end(session, reason)

    # -- viewers ---------------------------------------------------------------------------
    async def join_viewer(self, *, session_id: str, user_id: str, password_version: str,
                          request: Any, client_ip: str | None = None,
                          token_generation: int = 0) -> tuple[Session, Link]:
        """Admit a viewer whose token names ``session_id`` (:class:`Admission`).

        :raises SessionRefused: with the reason to show the viewer.
        """
        session, link = await self._admission.join_viewer(
            session_id=session_id, user_id=user_id, password_version=password_version,
            token_generation=token_generation, request=request, client_ip=client_ip)
        await self._start_recording(session, link.actor or link.id)
        channel = link.conn.channel
        if channel is not None and session.recorder is not None:
            session.recorder.note(f"{NOTE_NAME[channel]}_opened", link.actor, link.id)
        return session, link

    async def admission(self, session_id: str, user_id: str, *,
                        channel: Channel | None = None) -> Standing:
        """Where ``user_id`` stands with the end user of a live session (for a ``channel``:
        a terminal, files; or to view); a first request of another technician asks the end
        user (:class:`Admission`)."""
        return await self._admission.admission(session_id, user_id, channel=channel)

    async def user_changed(self, user_id: str, *, password_changed: bool = False,
                           revoked: str | None = None) -> None:
        """Apply a change to a user's standing to their live viewers at once: a deleted or
        disabled user, or one who lost ``view`` or the machine's organization, is closed
        out; one who lost ``control`` continues view-only; a changed password, or a
        revocation of the user's tokens (``revoked`` says why), closes every viewer with
        1008, as it voids every token."""
        user = await self.store.get_user(user_id)
        voided = revoked or ("the user's password was changed" if password_changed else None)
        for session in self.index.sessions():
            for own in [v for v in session.channels.values() if v.user_id == user_id]:
                assert own.conn.channel is not None
                refusal = voided or channel_refusal(own.conn.channel, user, session.organization,
                                                     tenant_id=session.tenant_id)
                if refusal is not None:
                    await self.leave_viewer(
                        session, own, f"access withdrawn: {refusal}",
                        code=CloseCode.POLICY_VIOLATION if voided else CloseCode.NORMAL)
            for viewer in [v for v in session.viewers.values() if v.user_id == user_id]:
                refusal = voided or viewing_refusal(user, session.organization,
                                                     tenant_id=session.tenant_id)
                if refusal is not None:
                    await self.leave_viewer(
                        session, viewer, f"access withdrawn: {refusal}",
                        code=CloseCode.POLICY_VIOLATION if voided else CloseCode.NORMAL)
                elif user is not None and not can_control(user) and not viewer.conn.view_only:
                    viewer.conn.view_only = True
                    session.tell_participants()
                    await self.audit.record(AuditEvent(
                        "viewer.downgraded", session_id=session.session_id,
                        agent_id=session.agent_id, actor=viewer.actor,
                        detail={"viewer_id": viewer.id, "reason": "control withdrawn"}))

    # -- recordings ------------------------------------------------------------------------
    async def _start_recording(self, session: Session, technician: str) -> None:
        """A technician watches: the session's recording starts, unless one runs."""
        record = session.recorder.start(technician) if session.recorder is not None else None
        if record is None:
            return
        session.tell_participants()  # the end user's panel says it is being recorded
        await self.writes.submit(("recording", record.id), f"start of recording {record.id}",
                                 partial(self.store.add_recording, record))
        await self.audit.record(AuditEvent(
            "recording.started", session_id=session.session_id, agent_id=session.agent_id,
            detail={"recording_id": record.id}))

    async def _stop_recording(self, session: Session, reason: str) -> None:
        """Nobody watches any more, or the session ends: its recording (if one runs) ends,
        its row and the audit log get the chain's hash."""
        finished = await session.recorder.stop(reason) if session.recorder is not None else None
        if finished is None:
            return
        session.tell_participants()
        recording_id = finished.record.id
        await self.writes.submit(
            ("recording", recording_id), f"end of recording {recording_id}",
            partial(self.store.finish_recording, recording_id, ended_at=utcnow(),
                    state=finished.state, reason=finished.reason, segments=finished.segments,
                    bytes=finished.bytes, sha256=finished.sha256,
                    technicians=finished.technicians))
        await self.audit.record(AuditEvent(
            "recording.finished", session_id=session.session_id, agent_id=session.agent_id,
            detail=recording_detail(finished)))

    async def leave_viewer(self, session: Session, viewer: Link, reason: str,
                           code: int = CloseCode.NORMAL, *, notified: bool = False) -> None:
        """A viewer leaves (its socket ended, or the server closes it): for a viewer of its
        own channel the agent ends its shell or its transfers, unless the agent told us it
        did (``notified``)."""
        if viewer.id in session.channels:
            await self._leave_channel(session, viewer, reason, code, notified=notified)
            return
        if session.viewers.pop(viewer.id, None) is None:
            return
        self.index.touch(session)
        reason = escaped(reason)  # may quote the viewer's own goodbye
        viewer.close(reason, code)
        if not session.ended:
            session.agent.send("stop_stream", pb.StopStream(viewer_id=viewer.id))
            session.tell_participants()
        with anyio.CancelScope(shield=True):
            if not session.viewers and not session.channels:
                await self._stop_recording(session, "the last technician left")
            await self.audit.record(AuditEvent(
                "viewer.left", session_id=session.session_id, agent_id=session.agent_id,
                actor=viewer.actor, client_ip=viewer.client_ip,
                tenant_id=session.tenant_id,
                detail={"viewer_id": viewer.id, "reason": reason,
                        "dropped_frames": viewer.outbox.dropped_frames,
                        "dropped_lossy": viewer.outbox.dropped_lossy,
                        "dropped_messages": sum(viewer.conn.dropped.values())}))

    async def _leave_channel(self, session: Session, viewer: Link, reason: str, code: int, *,
                             notified: bool) -> None:
        if session.channels.pop(viewer.id, None) is None:
            return
        channel = viewer.conn.channel
        assert channel is not None
        self.index.touch(session)
        reason = escaped(reason)
        viewer.close(reason, code)
        if not session.ended:
            if notified:
                pass
            elif channel is Channel.TERMINAL:
                session.agent.send("backstage_close", pb.BackstageClose(
                    viewer_id=viewer.id, reason=reason))
            else:
                session.agent.send("file_close", pb.FileClose(viewer_id=viewer.id,
                                                              reason=reason))
            session.tell_participants()
        detail: dict[str, Any] = {"viewer_id": viewer.id, "technician": viewer.actor,
                                  "reason": reason,
                                  "dropped_messages": sum(viewer.conn.dropped.values())}
        if viewer.window is not None:
            detail["output_bytes"] = viewer.window.sent_total
        if viewer.transfers is not None:
            detail["unfinished_transfers"] = sorted(
                t.path for t in viewer.transfers.open.values()
                if t.op in (pb.FILE_OP_UPLOAD, pb.FILE_OP_DOWNLOAD))
        if session.recorder is not None:
            session.recorder.note(f"{NOTE_NAME[channel]}_closed", viewer.actor, viewer.id,
                                  text=reason)
        with anyio.CancelScope(shield=True):
            if not session.viewers and not session.channels:
                await self._stop_recording(session, "the last technician left")
            await self.audit.record(AuditEvent(
                CLOSED[channel], session_id=session.session_id, agent_id=session.agent_id,
                actor=viewer.actor, client_ip=viewer.client_ip, detail=detail))
        log.info("%s %s of session %s closed: %s", channel.value, viewer.id,
                 session.session_id, reason)

    # -- operator actions ------------------------------------------------------------------
    async def send_to_agent(self, agent_id: str, kind: str, payload: Any) -> bool:
        session = self.index.for_agent(agent_id)
        if session is None or session.ended:
            return False
        return session.agent.send(kind, payload)

    async def disconnect_session(self, session_id: str, reason: str, *,
                                 mark_offline: bool = True) -> bool:
        """End a live session here; ``mark_offline=False`` leaves the machine's status to
        whoever set it last (the node that closed the session already did)."""
        session = self.index.get(session_id)
        if session is None:
            return False
        await self._end(session, reason, mark_offline=mark_offline)
        return True

    async def purge_session(self, session_id: str) -> bool:
        session = self.index.get(session_id)
        if session is None:
            return False
        await self.purge_machine(session.agent_id)
        return True

    async def purge_machine(self, agent_id: str) -> None:
        session = self.index.for_agent(agent_id)
        if session is not None:
            await self._end(session, "removed by an administrator")
        self.index.forget_machine(agent_id)

    async def close_agents_with_key(self, key_id: str, reason: str) -> int:
        doomed = [s for s in self.index.sessions() if s.key_id == key_id]
        for session in doomed:
            await self._end(session, reason)
        return len(doomed)

    async def shutdown(self, reason: str) -> None:
        """Every peer gets ``Disconnect{reason}``; the sessions' ends, machines' offline
        states and audit events are written together (a statement each, not one each per
        session: 2,000 sessions took 6,000 writes); wait briefly for the sockets to close."""
        self.index.closing = True
        closed = [(session, *ending) for session in list(self.index.sessions())
                  if (ending := self._close(session, reason, CloseCode.GOING_AWAY))]
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as group:  # at once: a recording's last
                for session, why, _ in closed:              # segments may take a while
                    group.start_soon(self._stop_recording, session,
                                     f"the session ended: {why}")
            ended, why = utcnow(), escaped(reason)  # each session's recorded reason
            await self.writes.submit(
                SHUTDOWN_KEY, f"end of {len(closed)} sessions",
                partial(self.store.end_sessions, [s.session_id for s, _, _ in closed],
                        ended, why))
            await self.writes.submit(
                SHUTDOWN_KEY, "offline state of their machines",
                partial(write_all_offline, self.store, self.index,
                        [s.agent_id for s, _, current in closed if current], ended))
            await self.audit.record_many([self._closed(s, why, ended) for s, _, _ in closed])
        with anyio.move_on_after(_SHUTDOWN_GRACE):
            await self._no_sockets.wait()

    def socket_opened(self) -> None:
        """A socket task started; :meth:`shutdown` waits for every one to finish."""
        self._sockets += 1
        if self._no_sockets.is_set():
            self._no_sockets = anyio.Event()

    def socket_closed(self) -> None:
        self._sockets -= 1
        if self._sockets <= 0:
            self._no_sockets.set()

    # -- the one way a session ends ----------------------------------------------------------
    async def _end(self, session: Session, reason: str, *, mark_offline: bool = True,
                   close_code: int = CloseCode.NORMAL) -> None:
        ending = self._close(session, reason, close_code)
        if ending is None:
            return
        reason, current = ending
        with anyio.CancelScope(shield=True):
            await self._stop_recording(session, f"the session ended: {reason}")
            ended = utcnow()
            await self.writes.submit(
                ("session", session.session_id), f"end of session {session.session_id}",
                partial(self.store.update_session, session.session_id, ended_at=ended,
                        end_reason=reason))
            if mark_offline and current:
                await self.writes.submit(
                    ("machine", session.agent_id), f"offline state of machine {session.agent_id}",
                    partial(write_offline, self.store, self.index, session.agent_id, ended))
            await self.audit.record(self._closed(session, reason, ended))

    def _close(self, session: Session, reason: str, close_code: int) -> tuple[str, bool] | None:
        """Take a session out of the live state and close its sockets. Returns the reason
        as recorded and whether it was its agent's current session (not replaced by a newer
        connection); None when it had ended already."""
        if session.ended:
            return None
        session.ended = True
        reason = escaped(reason)  # may quote the peer's own goodbye or denial
        current = self.index.remove(session)
        for viewer in [*session.viewers.values(), *session.channels.values()]:
            viewer.close(reason, close_code)
        session.agent.close(reason, close_code)
        return reason, current

    def _closed(self, session: Session, reason: str, ended: datetime) -> AuditEvent:
        """Tell the plugins a session ended; the audit event that records it."""
        record = SessionRecord(
            id=session.session_id, agent_id=session.agent_id, is_managed=session.is_managed,
            source=session.source, consent_state=session.consent_state,
            technician=session.technician_name or None, created_at=session.created_at,
            ended_at=ended, end_reason=reason)
        self.plugins.session_closed(record, reason)
        log.info("session %s of agent %s ended: %s", session.session_id, session.agent_id, reason)
        return AuditEvent("session.closed", session_id=session.session_id,
                          agent_id=session.agent_id, tenant_id=session.tenant_id,
                          detail={"reason": reason, "viewers": len(session.viewers)})


_MOVED: Mapping[int, str] = {pb.FILE_OP_UPLOAD: "file.uploaded",
                             pb.FILE_OP_DOWNLOAD: "file.downloaded",
                             pb.FILE_OP_MKDIR: "file.folder_created"}
"""The audit kind of each file operation that succeeded."""


def _asked_for(ask: Ask) -> dict[str, bool]:
    """What a consent row says the technician asked for beyond the screen."""
    return {channel.value: ask.channel is channel for channel in Channel}


Handler = Callable[[Registry, Session, Link, Inbound], Awaitable[str | None]]
"""Acts on a message (from the sender, a link of the session) the route table sends to the
server; returns why it was dropped."""

_FROM_AGENT: Mapping[str, Handler] = {
    "display_info": Registry._on_display_info,
    "agent_status": Registry._on_agent_status,
    "update_status": Registry._on_update_status,
    "consent_response": Registry._on_consent_response,
    "backstage_data": Registry._on_terminal_output,
    "backstage_close": Registry._on_terminal_closed,
    "file_reply": Registry._on_file_agent,
    "file_data": Registry._on_file_agent,
    "file_ack": Registry._on_file_agent,
    "file_close": Registry._on_file_closed,
}
_FROM_VIEWER: Mapping[str, Handler] = {
    "switch_display": Registry._on_switch_display,
    "backstage_data": Registry._on_terminal_input,
    "backstage_resize": Registry._on_terminal_input,
    "backstage_ack": Registry._on_terminal_input,
    "file_request": Registry._on_file_request,
    "file_data": Registry._on_file_viewer_data,
    "file_ack": Registry._on_file_viewer_data,
}
HANDLERS: Mapping[Role, Mapping[str, Handler]] = {Role.AGENT: _FROM_AGENT,
                                                  Role.VIEWER: _FROM_VIEWER}
"""The kinds the registry acts on, by sender (``peer.py`` answers heartbeats and goodbyes,
the first message is the handshake): together, every row the table sends to the server."""

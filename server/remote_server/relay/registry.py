"""The one in-memory session registry: who is connected, and the identity indexes.

It binds authenticated agents to machine rows and sessions (SPEC 5.2, 5.4),
runs consent (SPEC 3.1), admits viewers, acts on the few messages the server
itself handles, and ends sessions on every path (peer gone, consent denied or
timed out, operator removal, key revocation, shutdown). Persistence goes
through the store plugin; audit through :class:`Audit`.

Indexes: ``agent_id -> Session`` for live sessions and ``machine_uid ->
agent_id`` for unkeyed machines. Reattach consults the uid index first;
every removal path calls :meth:`purge_machine`, which purges the uid index.
"""

from __future__ import annotations

import dataclasses
import hmac
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any

import anyio

from remote_core.errors import ConflictError, NotFoundError, StoreError
from remote_core.interfaces import Store
from remote_core.plugins import Plugins
from remote_core.protocol import CloseCode, Connection, Inbound, Role, pb
from remote_core.records import (
    CONSENT_GRANTED,
    CONSENT_PENDING,
    Event,
    Machine,
    MachineReport,
    SessionRecord,
    User,
    utcnow,
)
from remote_core.settings import Settings
from remote_core.textrules import escaped
from remote_core.types import (
    AgentCredential,
    AgentIdentity,
    AuthContext,
    ConsentDecision,
    SessionContext,
)

from .audit import Audit
from .auth import NotReady, Refused, Unavailable, authenticate
from .consent import Ask, ConsentBook, Standing
from .identity import MAX_ID, resolve_unkeyed
from .link import Link
from .rules import (
    can_control,
    check_session_type,
    consent_refusal,
    initial_consent_state,
    reported_text,
    status_report,
    update_status_detail,
    viewing_refusal,
)
from .session import LiveSession, Session

__all__ = ["HANDLERS", "Handler", "Registry"]

log = logging.getLogger(__name__)

_CONNECTED = "connected"  # in-memory support-code state after the first bind (SPEC 3.2)
_SHUTDOWN_GRACE = 5.0


class Registry:
    """Live sessions and the identity indexes, for one server process."""

    def __init__(self, *, settings: Settings, store: Store, plugins: Plugins,
                 audit: Audit) -> None:
        self.settings = settings
        self.store = store
        self.plugins = plugins
        self.audit = audit
        self.writes = audit.writes  # one queue: writes that must survive a database outage
        context = AuthContext(settings=settings, store=store)
        self._authenticators = [m.factory(context) for m in plugins.auth_methods()
                                if m.factory is not None]
        self._sessions: dict[str, Session] = {}
        self._by_agent: dict[str, Session] = {}
        self._by_uid: dict[str, str] = {}
        self._codes: dict[str, str] = {}
        self._closing = False
        self._sockets = 0
        self._no_sockets = anyio.Event()
        self._no_sockets.set()

    # -- start-up --------------------------------------------------------------------------
    async def restore(self) -> None:
        """Index the stored machines; keyed ones are never indexed by uid (SPEC 5.2).

        Raises whatever the store raises: a failed restore stops start-up (fail closed).
        """
        result = await self.store.restore_machines()
        self._by_uid = {
            m.machine_uid: m.agent_id for m in result.machines
            if m.machine_uid and m.agent_id not in result.keyed_agent_ids
        }
        offline = await self.store.set_all_machines_offline()
        # Nothing is live in a process that has just started: a session still open in the
        # database was left so by a server that died (SIGKILL, power loss).
        ended = await self.store.end_open_sessions("the server stopped", utcnow())
        log.info("registry restored %d machines (%d keyed); %d left online and %d sessions "
                 "left open by the previous run closed", len(result.machines),
                 len(result.keyed_agent_ids), offline, ended)

    # -- queries ---------------------------------------------------------------------------
    def live_sessions(self) -> list[LiveSession]:
        return [s.snapshot() for s in self._sessions.values()]

    def session(self, session_id: str) -> LiveSession | None:
        found = self._sessions.get(session_id)
        return found.snapshot() if found is not None else None

    def session_for_agent(self, agent_id: str) -> LiveSession | None:
        found = self._by_agent.get(agent_id)
        return found.snapshot() if found is not None else None

    def is_online(self, agent_id: str) -> bool:
        return agent_id in self._by_agent

    def live(self, session_id: str) -> Session | None:
        """The mutable session (relay internals only)."""
        return self._sessions.get(session_id)

    def agent_for_uid(self, machine_uid: str) -> str | None:
        return self._by_uid.get(machine_uid)

    # -- agents ----------------------------------------------------------------------------
    async def open_agent(self, request: Any, *, client_ip: str | None = None,
                         machine_uid: str | None = None) -> Session:
        """Authenticate an agent's ``SessionRequest`` and open its session.

        The agent's link already holds the ``SessionResponse`` (and, for an
        attended session, the ``ConsentRequest``) when this returns.

        :raises Refused: with the reason to show the agent.
        """
        if self._closing:
            raise Refused("the server is shutting down")
        check_session_type(request.session_type)
        credential = AgentCredential(
            token=request.session_token, agent_id=request.agent_id.strip(),
            machine_uid=(machine_uid or "").strip() or None,
            client_version=request.client_version[:64], client_ip=client_ip,
        )
        try:
            return await self._open_agent(credential, client_ip)
        except (ConflictError, NotFoundError):
            raise
        except StoreError as exc:
            log.warning("agent from %s refused: the database is unavailable (%s)",
                        client_ip, exc)
            raise Unavailable("the server's database is unavailable; retry later") from None

    async def _open_agent(self, credential: AgentCredential, client_ip: str | None) -> Session:
        try:
            identity = await authenticate(self._authenticators, credential)
        except Refused as exc:
            await self.audit.record(Event(
                "agent.auth_failed", agent_id=escaped(credential.agent_id, MAX_ID) or None,
                client_ip=client_ip, detail={"error": str(exc)}))
            raise
        session_id = str(uuid.uuid4())
        code = identity.support_code
        if code is not None:
            if self._codes.get(code) == _CONNECTED:
                raise Refused("support code already used")
            self._codes[code] = _CONNECTED  # Pending -> Connected, before any await
        try:
            return await self._bind(identity, credential, session_id)
        except BaseException:
            if code is not None and not await self._code_consumed(code):
                self._codes.pop(code, None)  # back to Pending: the database never bound it
            raise

    async def _code_consumed(self, code: str) -> bool:
        with anyio.CancelScope(shield=True):
            try:
                row = await self.store.get_support_code(code)
            except Exception:
                return True  # unknown: keep the code Connected (fail closed)
        return row is not None and row.consumed_at is not None

    async def _bind(self, identity: AgentIdentity, credential: AgentCredential,
                    session_id: str) -> Session:
        if identity.authoritative:
            agent_id = identity.agent_id
            if await self.store.get_machine_by_id(agent_id) is None:
                raise Refused("the machine this key belongs to no longer exists")
            uid = None  # a keyed agent's claimed uid is dropped (SPEC 5.2)
        else:
            agent_id, uid = await resolve_unkeyed(self.store, self._by_uid, identity)
        if identity.support_code is not None:
            consumed = await self.store.consume_support_code(
                identity.support_code, agent_id, session_id, utcnow())
            if not consumed:
                raise Refused("support code already used")
        machine = await self.store.upsert_machine(MachineReport(
            agent_id=agent_id, machine_uid=uid, status="online",
            agent_version=reported_text(credential.client_version),
            is_persistent=identity.persistent,
        ))
        agent_id = machine.agent_id
        if uid:
            self._by_uid[uid] = agent_id
        try:
            return await self._register(identity, credential, session_id, machine, uid)
        except StoreError:
            # The row says "online" already: put that right once the database can take it.
            await self.writes.submit(("machine", agent_id), f"offline state of machine "
                                     f"{agent_id}", partial(self._write_offline, agent_id,
                                                            utcnow()))
            raise

    async def _register(self, identity: AgentIdentity, credential: AgentCredential,
                        session_id: str, machine: Machine, uid: str | None) -> Session:
        agent_id = machine.agent_id
        consent_state, control = await self._decide_consent(identity, session_id, agent_id)
        now = utcnow()
        conn = Connection(Role.SERVER, Role.AGENT, self.settings.max_message_bytes)
        link = Link(conn, self.settings.viewer_buffer_bytes, agent_id, credential.client_ip)
        session = Session(
            session_id=session_id, agent_id=agent_id, agent=link, source=identity.method,
            is_managed=not identity.attended, consent_state=consent_state, created_at=now,
            organization=machine.organization, technician_id=identity.technician_id,
            technician_name=identity.technician_name, control_consented=control,
            key_id=identity.key_id, machine_uid=uid, support_code=identity.support_code,
        )
        if identity.attended:
            session.consent = ConsentBook(self.settings.consent_timeout + 2)  # the dialog first
        record = SessionRecord(id=session_id, agent_id=agent_id, is_managed=session.is_managed,
                               source=identity.method, consent_state=consent_state,
                               technician=identity.technician_name or None, created_at=now)
        await self.store.create_session(record)
        previous = self._by_agent.get(agent_id)  # no await from here to registration
        self._sessions[session_id] = session
        self._by_agent[agent_id] = session
        if previous is not None:
            await self._end(previous, "replaced by a new connection of this agent")
        link.outbox.put(conn.accept(session_id))
        if consent_state == CONSENT_PENDING and session.consent is not None:
            first = Ask(identity.technician_id, identity.technician_name, control, first=True)
            self._ask(session, first)
        self.plugins.session_opened(record)
        await self.audit.record(Event("session.opened", session_id=session_id, agent_id=agent_id,
                                      actor=identity.technician_id, client_ip=credential.client_ip,
                                      detail={"source": identity.method,
                                              "consent_state": consent_state}))
        log.info("agent %s connected (%s), session %s, consent %s", agent_id, identity.method,
                 session_id, consent_state)
        return session

    async def _decide_consent(self, identity: AgentIdentity, session_id: str,
                              agent_id: str) -> tuple[str, bool]:
        """(consent_state, whether control is consented); the policy hook decides first."""
        control = True
        if identity.technician_id:
            user = await self.store.get_user(identity.technician_id)
            control = user is not None and can_control(user)
        decision = self.plugins.consent_policy(SessionContext(
            session_id=session_id, agent_id=agent_id, method=identity.method,
            attended=identity.attended, technician_name=identity.technician_name,
            access_mode=pb.CONSENT_CONTROL if control else pb.CONSENT_VIEW,
        ))
        if decision is ConsentDecision.DENY:
            await self.audit.record(Event("session.consent_denied", session_id=session_id,
                                          agent_id=agent_id, detail={"by": "policy"}))
            raise Refused("the session was refused by the server's consent policy")
        return initial_consent_state(decision, identity.attended), control

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
        await self.audit.record(Event("session.consent_timeout", session_id=session.session_id,
                                      agent_id=session.agent_id,
                                      detail={"technician": ask.name}))
        if ask.first:
            await self._end(session, "consent timed out")
            return
        log.info("consent for %s to join session %s timed out", ask.name, session.session_id)
        self._ask_next(session)

    def _ask(self, session: Session, ask: Ask) -> None:
        """Queue a question for the end user; it goes out when no other is open."""
        assert session.consent is not None
        session.consent.queue(ask)
        self._ask_next(session)

    def _ask_next(self, session: Session) -> None:
        """Send the next queued question, if none is open (one at a time: see consent.py)."""
        assert session.consent is not None
        ask = session.consent.next()
        if ask is None or session.ended:
            return
        session.agent.send("consent_request", pb.ConsentRequest(
            session_id=session.session_id, technician_name=ask.name,
            access_mode=pb.CONSENT_CONTROL if ask.control else pb.CONSENT_VIEW,
            timeout_secs=self.settings.consent_timeout))
        session.consent_asked.set()

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
        await self.writes.submit(("machine", session.agent_id),
                                 f"status report of machine {session.agent_id}",
                                 partial(self._write_status, session, report), coalesce=True)

    async def _write_status(self, session: Session, report: MachineReport) -> None:
        """Runs now or after an outage: the machine's state is what it is when it runs."""
        before = await self.store.get_machine(session.agent_id)
        if before is None and session.ended:
            return  # removed meanwhile: a late report must not bring it back
        online = self.is_online(session.agent_id)
        machine = await self.store.upsert_machine(
            dataclasses.replace(report, status="online" if online else "offline"))
        session.organization = machine.organization
        placed = {name: getattr(machine, name) for name in ("organization", "site", "tags")
                  if before is not None and getattr(before, name) != getattr(machine, name)}
        if placed:
            await self.audit.record(Event(
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
        return None if handler is None else await handler(self, session, event)

    async def _on_display_info(self, session: Session, event: Inbound) -> str | None:
        session.display_info = event.payload()  # what a viewer joining later is answered
        return None

    async def _on_agent_status(self, session: Session, event: Inbound) -> str | None:
        await self._agent_status(session, event.payload())
        return None

    async def _on_update_status(self, session: Session, event: Inbound) -> str | None:
        await self.audit.record(Event("agent.update_status", session_id=session.session_id,
                                      agent_id=session.agent_id,
                                      detail=update_status_detail(event.payload())))
        return None

    async def _on_consent_response(self, session: Session, event: Inbound) -> str | None:
        return await self._consent_response(session, event.payload())

    async def _on_switch_display(self, session: Session, event: Inbound) -> str | None:
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
            await self.audit.record(Event("session.consent_denied", session_id=session.session_id,
                                          agent_id=session.agent_id,
                                          detail={"by": "end user", "reason": reason,
                                                  "technician": ask.name}))
            if ask.first:
                await self._end(session, "consent denied" + (f": {reason}" if reason else ""))
                return None
            log.info("consent for %s to join session %s denied", ask.name, session.session_id)
        self._ask_next(session)
        return None

    async def _consent_granted(self, session: Session, ask: Ask) -> None:
        if ask.first:
            session.consent_state = CONSENT_GRANTED
            await self.store.update_session(session.session_id, consent_state=CONSENT_GRANTED)
        else:
            assert session.consent is not None
            session.consent.admit(ask)
        await self.audit.record(Event("session.consent_granted", session_id=session.session_id,
                                      agent_id=session.agent_id,
                                      detail={"technician": ask.name}))
        log.info("consent granted to %s for session %s", ask.name, session.session_id)

    async def agent_gone(self, session: Session, reason: str) -> None:
        """The agent's socket ended (closed, failed or timed out)."""
        await self._end(session, reason)

    # -- viewers ---------------------------------------------------------------------------
    async def join_viewer(self, *, session_id: str, user_id: str, password_version: str,
                          request: Any, client_ip: str | None = None) -> tuple[Session, Link]:
        """Admit a viewer whose token names ``session_id``; its link holds the response.

        ``password_version`` is the user's password fingerprint when the token was minted:
        a token from before a password change is refused.

        :raises Refused: with the reason to show the viewer.
        """
        if self._closing:
            raise Refused("the server is shutting down")
        check_session_type(request.session_type)
        session = self._sessions.get(session_id)
        if session is None or session.ended:
            raise Refused("the session is not live")
        if request.agent_id and request.agent_id != session.agent_id:
            raise Refused("the viewer token is for another session")
        if session.pending:
            raise Refused("the session is awaiting the end user's consent")
        user = await self._viewing_user(session, user_id)
        refusal = consent_refusal(session.standing(user.id), session.technician_name)
        if refusal is not None:
            raise Refused(refusal)
        if not hmac.compare_digest(user.password_fingerprint, password_version):
            raise Refused("the viewer token was issued before a password change")
        view_only = (request.session_type == pb.VIEW_ONLY or not can_control(user)
                     or not session.control_consented_for(user.id))
        viewer_id = uuid.uuid4().hex
        conn = Connection(Role.SERVER, Role.VIEWER, self.settings.max_message_bytes)
        link = Link(conn, self.settings.viewer_buffer_bytes, viewer_id, client_ip)
        link.actor = user.username
        link.user_id = user.id
        link.outbox.put(conn.accept(session_id, session.display_info, view_only=view_only))
        session.viewers[viewer_id] = link
        session.agent.send("start_stream", pb.StartStream(viewer_id=viewer_id,
                                                          display_id=session.display_id))
        session.tell_participants()
        await self.audit.record(Event("viewer.joined", session_id=session_id,
                                      agent_id=session.agent_id, actor=user.username,
                                      client_ip=client_ip,
                                      detail={"viewer_id": viewer_id, "view_only": view_only}))
        return session, link

    async def _viewing_user(self, session: Session, user_id: str) -> User:
        """The user, if they may view this session's machine at all now.

        :raises Refused: they may not (gone, disabled, no ``view``, another organization).
        """
        user = await self.store.get_user(user_id)
        refusal = viewing_refusal(user, session.organization)
        if refusal is not None:
            raise Refused(refusal)
        assert user is not None
        return user

    async def admission(self, session_id: str, user_id: str) -> Standing:
        """Where ``user_id`` stands with the end user of a live, consented session; a first
        request of a technician the end user has not been asked about asks them now.

        The consent policy hook decides first, as for the session's own technician.

        :raises NotReady: the session is not live or awaits its own consent.
        :raises Refused: the user may not view this machine at all.
        """
        session = self._sessions.get(session_id)
        if session is None or session.ended:
            raise NotReady("the session is not live")
        if session.pending:
            raise NotReady("the session is still awaiting the end user's consent")
        user = await self._viewing_user(session, user_id)
        standing = session.standing(user.id)
        if standing is not Standing.UNASKED or session.ended:
            return standing
        assert session.consent is not None
        ask = Ask(user.id, user.username, can_control(user))
        decision = self.plugins.consent_policy(SessionContext(
            session_id=session_id, agent_id=session.agent_id, method=session.source,
            attended=True, technician_name=ask.name,
            access_mode=pb.CONSENT_CONTROL if ask.control else pb.CONSENT_VIEW))
        if decision is ConsentDecision.DENY:
            session.consent.refuse(ask, Standing.DENIED)
            await self.audit.record(Event("session.consent_denied", session_id=session_id,
                                          agent_id=session.agent_id, actor=user.username,
                                          detail={"by": "policy", "technician": ask.name}))
        elif decision is ConsentDecision.APPROVE:
            session.consent.admit(ask)
            await self.audit.record(Event("session.consent_granted", session_id=session_id,
                                          agent_id=session.agent_id, actor=user.username,
                                          detail={"by": "policy", "technician": ask.name}))
        else:
            self._ask(session, ask)  # no await since the standing was read: asked once
            await self.audit.record(Event("session.consent_requested", session_id=session_id,
                                          agent_id=session.agent_id, actor=user.username,
                                          detail={"technician": ask.name,
                                                  "control": ask.control}))
            log.info("asking the end user of session %s to admit %s", session_id, ask.name)
        return session.standing(user.id)

    async def user_changed(self, user_id: str, *, password_changed: bool = False) -> None:
        """Apply a change to a user's standing to their live viewers at once: a deleted or
        disabled user, or one who lost ``view`` or the machine's organization, is closed
        out; one who lost ``control`` continues view-only; a changed password closes every
        viewer, as it voids every token."""
        user = await self.store.get_user(user_id)
        for session in list(self._sessions.values()):
            for viewer in [v for v in session.viewers.values() if v.user_id == user_id]:
                refusal = ("the user's password was changed" if password_changed
                           else viewing_refusal(user, session.organization))
                if refusal is not None:
                    await self.leave_viewer(session, viewer, f"access withdrawn: {refusal}")
                elif user is not None and not can_control(user) and not viewer.conn.view_only:
                    viewer.conn.view_only = True
                    session.tell_participants()
                    await self.audit.record(Event(
                        "viewer.downgraded", session_id=session.session_id,
                        agent_id=session.agent_id, actor=viewer.actor,
                        detail={"viewer_id": viewer.id, "reason": "control withdrawn"}))

    async def leave_viewer(self, session: Session, viewer: Link, reason: str) -> None:
        if session.viewers.pop(viewer.id, None) is None:
            return
        reason = escaped(reason)  # may quote the viewer's own goodbye
        viewer.close(reason)
        if not session.ended:
            session.agent.send("stop_stream", pb.StopStream(viewer_id=viewer.id))
            session.tell_participants()
        with anyio.CancelScope(shield=True):
            await self.audit.record(Event(
                "viewer.left", session_id=session.session_id, agent_id=session.agent_id,
                actor=viewer.actor, client_ip=viewer.client_ip,
                detail={"viewer_id": viewer.id, "reason": reason,
                        "dropped_frames": viewer.outbox.dropped_frames,
                        "dropped_messages": sum(viewer.conn.dropped.values())}))

    # -- operator actions ------------------------------------------------------------------
    async def send_to_agent(self, agent_id: str, kind: str, payload: Any) -> bool:
        session = self._by_agent.get(agent_id)
        if session is None or session.ended:
            return False
        return session.agent.send(kind, payload)

    async def disconnect_session(self, session_id: str, reason: str) -> bool:
        session = self._sessions.get(session_id)
        if session is None:
            return False
        await self._end(session, reason)
        return True

    async def purge_session(self, session_id: str) -> bool:
        session = self._sessions.get(session_id)
        if session is None:
            return False
        await self.purge_machine(session.agent_id)
        return True

    async def purge_machine(self, agent_id: str) -> None:
        session = self._by_agent.get(agent_id)
        if session is not None:
            await self._end(session, "removed by an administrator")
        for uid in [u for u, a in self._by_uid.items() if a == agent_id]:
            del self._by_uid[uid]

    async def close_agents_with_key(self, key_id: str, reason: str) -> int:
        doomed = [s for s in self._sessions.values() if s.key_id == key_id]
        for session in doomed:
            await self._end(session, reason)
        return len(doomed)

    async def shutdown(self, reason: str) -> None:
        """Every peer gets ``Disconnect{reason}``; wait briefly for the sockets to close."""
        self._closing = True
        for session in list(self._sessions.values()):
            await self._end(session, reason, close_code=CloseCode.GOING_AWAY)
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

    async def _write_offline(self, agent_id: str, ended: Any) -> None:
        if not self.is_online(agent_id):  # not if the agent has come back meanwhile
            await self.store.set_machine_status(agent_id, "offline", ended)

    # -- the one way a session ends ----------------------------------------------------------
    async def _end(self, session: Session, reason: str, *, mark_offline: bool = True,
                   close_code: int = CloseCode.NORMAL) -> None:
        if session.ended:
            return
        session.ended = True
        reason = escaped(reason)  # may quote the peer's own goodbye or denial
        self._sessions.pop(session.session_id, None)
        if session.support_code is not None:
            # Single use from now on rests on the database (consumed_at): nothing to keep.
            self._codes.pop(session.support_code, None)
        if self._by_agent.get(session.agent_id) is session:
            del self._by_agent[session.agent_id]
        else:
            mark_offline = False
        for viewer in list(session.viewers.values()):
            viewer.close(reason, close_code)
        session.agent.close(reason, close_code)
        with anyio.CancelScope(shield=True):
            ended = utcnow()
            await self.writes.submit(
                ("session", session.session_id), f"end of session {session.session_id}",
                partial(self.store.update_session, session.session_id, ended_at=ended,
                        end_reason=reason))
            if mark_offline:
                await self.writes.submit(
                    ("machine", session.agent_id), f"offline state of machine {session.agent_id}",
                    partial(self._write_offline, session.agent_id, ended))
            record = SessionRecord(
                id=session.session_id, agent_id=session.agent_id, is_managed=session.is_managed,
                source=session.source, consent_state=session.consent_state,
                technician=session.technician_name or None, created_at=session.created_at,
                ended_at=ended, end_reason=reason)
            self.plugins.session_closed(record, reason)
            await self.audit.record(Event("session.closed", session_id=session.session_id,
                                          agent_id=session.agent_id,
                                          detail={"reason": reason,
                                                  "viewers": len(session.viewers)}))
        log.info("session %s of agent %s ended: %s", session.session_id, session.agent_id, reason)


Handler = Callable[[Registry, Session, Inbound], Awaitable[str | None]]
"""Acts on a message the route table sends to the server; returns why it was dropped."""

_FROM_AGENT: Mapping[str, Handler] = {
    "display_info": Registry._on_display_info,
    "agent_status": Registry._on_agent_status,
    "update_status": Registry._on_update_status,
    "consent_response": Registry._on_consent_response,
}
_FROM_VIEWER: Mapping[str, Handler] = {
    "switch_display": Registry._on_switch_display,
}
HANDLERS: Mapping[Role, Mapping[str, Handler]] = {Role.AGENT: _FROM_AGENT,
                                                  Role.VIEWER: _FROM_VIEWER}
"""The kinds the registry acts on, by sender (``peer.py`` answers heartbeats and goodbyes,
the first message is the handshake): together, every row the table sends to the server."""

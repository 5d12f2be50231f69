"""Who gets in: agents (authentication, identity, consent policy) and viewers.

An agent's ``SessionRequest`` is authenticated by the loaded methods, bound to
its machine row (SPEC 5.2, 5.4) and, for an attended session, to its support
code (single use: claimed in the index, then consumed by the database's
conditional update), and registered with its consent state (SPEC 3.1, the
policy hook first). A viewer is admitted against the user's standing now (not
only the token's), the end user's consent for that technician, and the
password the token was minted under. Everything here is policy and store
access; the index holds who is connected and the registry ends sessions.
"""

from __future__ import annotations

import hmac
import logging
import uuid
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import anyio

from remote_core.errors import ConflictError, NotFoundError, SessionRefused, StoreError
from remote_core.interfaces import RecordingStore, Store
from remote_core.plugins import Plugins
from remote_core.protocol import Channel, Connection, Role, pb
from remote_core.protocol.backstage import Window
from remote_core.records import (
    CONSENT_PENDING,
    AuditEvent,
    Machine,
    MachineReport,
    SessionRecord,
    User,
    tenant_of,
    utcnow,
)
from remote_core.textrules import escaped
from remote_core.types import (
    AgentCredential,
    AgentIdentity,
    ConsentAsk,
    ConsentDecision,
)

from ..observe.counters import rate_limited
from ..settings import ServerSettings
from .audit import Audit
from .auth import NotReady, Unavailable, authenticate, authenticators
from .consent import Ask, ConsentBook, Standing
from .identity import MAX_ID, resolve_unkeyed
from .index import SessionIndex
from .link import Link
from .recorder import SessionRecorder
from .rules import (
    CHANNEL_OF_TYPE,
    OPENED,
    can_control,
    channel_consent_refusal,
    channel_refusal,
    check_session_type,
    consent_refusal,
    initial_consent_state,
    reported_text,
    shows_session_panel,
    viewer_codecs,
    viewing_refusal,
)
from .session import Session
from .transfers import TransferBook

__all__ = ["Admission", "write_offline"]

log = logging.getLogger(__name__)

EndSession = Callable[[Session, str], Awaitable[None]]

REPLACED = "replaced by a new connection of this agent"
"""Why an agent's session ended: the same agent connected again."""

AGENTS_ADMITTED_AT_ONCE = 32
"""Agents whose admission (some six database round trips) runs at once; the rest wait their
turn in order. Unbounded, a storm of 2,000 ran every admission in lock-step through one
database queue: none answered before ten seconds, and a bigger storm would have run all of
them into the agents' 30 s wait for an answer. In turns, answers start at once. No more
than ``max_agents_waiting`` wait: past that an agent is told to retry later, so sockets
that have sent a request stay bounded as the silent ones are (T36)."""


class Admission:
    """Opens agents' sessions and admits viewers into them, for one server process.

    :param end: how a session ends (the registry's one way), for the session a
        reconnecting agent replaces.
    """

    def __init__(self, *, settings: ServerSettings, store: Store, plugins: Plugins, audit: Audit,
                 index: SessionIndex, end: EndSession,
                 recordings: RecordingStore | None = None) -> None:
        self._settings = settings
        self._store = store
        self._recordings = recordings
        self._recording_policy = settings.recording_rules()
        self._plugins = plugins
        self._audit = audit
        self._writes = audit.writes
        self._index = index
        self._end = end
        self._authenticators = authenticators(plugins, store)
        self._admitting = anyio.CapacityLimiter(AGENTS_ADMITTED_AT_ONCE)

    @property
    def agents_waiting(self) -> int:
        """Agents whose request arrived and who wait for their turn to be admitted."""
        return self._admitting.statistics().tasks_waiting

    async def open_agent(self, request: Any, *, client_ip: str | None = None,
                         machine_uid: str | None = None) -> Session:
        """Authenticate an agent's ``SessionRequest`` and open its session.

        The agent's link already holds the ``SessionResponse`` (and, for an
        attended session, the ``ConsentRequest``) when this returns.

        :raises SessionRefused: with the reason to show the agent.
        """
        if self._index.closing:
            raise SessionRefused("the server is shutting down")
        if self._index.fenced is not None:
            raise Unavailable(self._index.fenced)
        check_session_type(request.session_type)
        credential = AgentCredential(
            token=request.session_token, agent_id=request.agent_id.strip(),
            machine_uid=(machine_uid or "").strip() or None,
            client_version=request.client_version[:64], client_ip=client_ip,
        )
        if self.agents_waiting >= self._settings.max_agents_waiting:
            rate_limited("admission", 0.0)
            raise Unavailable("the server is busy admitting other agents; retry later")
        try:
            async with self._admitting:
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
        except SessionRefused as exc:
            await self._audit.record(AuditEvent(
                "agent.auth_failed", agent_id=escaped(credential.agent_id, MAX_ID) or None,
                client_ip=client_ip, detail={"error": str(exc)}))
            raise
        session_id = str(uuid.uuid4())
        code = identity.support_code
        if code is not None:
            if not self._index.claim_code(code):  # Pending -> Connected, before any await
                raise SessionRefused("support code already used")
        try:
            return await self._bind(identity, credential, session_id)
        except BaseException:
            if code is not None and not await self._code_consumed(code):
                self._index.release_code(code)  # back to Pending: the database never bound it
            raise

    async def _code_consumed(self, code: str) -> bool:
        with anyio.CancelScope(shield=True):
            try:
                row = await self._store.get_support_code(code)
            except Exception:
                return True  # unknown: keep the code Connected (fail closed)
        return row is not None and row.consumed_at is not None

    async def _bind(self, identity: AgentIdentity, credential: AgentCredential,
                    session_id: str) -> Session:
        if identity.authoritative:
            agent_id = identity.agent_id
            keyed = await self._store.get_machine_by_id(agent_id)
            if keyed is None:
                raise SessionRefused("the machine this key belongs to no longer exists")
            tenant_id = tenant_of(keyed.tenant_id)
            uid = None  # a keyed agent's claimed uid is dropped (SPEC 5.2)
        else:
            tenant_id = await self._tenant_of_code(identity.support_code)
            agent_id, uid = await resolve_unkeyed(self._store, self._index.uids, identity,
                                                  tenant_id)
        await self._check_tenant(tenant_id)
        if identity.support_code is not None:
            consumed = await self._store.consume_support_code(
                identity.support_code, agent_id, session_id, utcnow())
            if not consumed:
                raise SessionRefused("support code already used")
        machine = await self._store.upsert_machine(MachineReport(
            agent_id=agent_id, machine_uid=uid, status="online",
            agent_version=reported_text(credential.client_version),
            is_persistent=identity.persistent, tenant_id=tenant_id,
        ))
        agent_id = machine.agent_id
        if uid:
            self._index.remember_uid(uid, agent_id)
        try:
            return await self._register(identity, credential, session_id, machine, uid)
        except StoreError:
            # The row says "online" already: put that right once the database can take it.
            await self._writes.submit(("machine", agent_id), f"offline state of machine "
                                     f"{agent_id}", partial(write_offline, self._store, self._index,
                                                            agent_id, utcnow()))
            raise

    async def _tenant_of_code(self, code: str | None) -> str:
        """The tenant an unkeyed agent joins: its support code's (the technician's who
        made it), else the default tenant."""
        row = await self._store.get_support_code(code) if code is not None else None
        return tenant_of(row.tenant_id if row is not None else None)

    async def _check_tenant(self, tenant_id: str) -> None:
        tenant = await self._store.get_tenant(tenant_id)
        if tenant is None or tenant.disabled:
            raise SessionRefused("this machine's tenant is disabled on this server")

    async def _register(self, identity: AgentIdentity, credential: AgentCredential,
                        session_id: str, machine: Machine, uid: str | None) -> Session:
        agent_id = machine.agent_id
        recording = self._recording_mode(machine)
        consent_state, control = await self._decide_consent(identity, session_id, agent_id,
                                                            recorded=recording != "off")
        now = utcnow()
        conn = Connection(Role.SERVER, Role.AGENT, self._settings.max_message_bytes)
        link = Link(conn, self._settings.viewer_buffer_bytes, agent_id, credential.client_ip)
        session = Session(
            session_id=session_id, agent_id=agent_id, agent=link, source=identity.method,
            is_managed=not identity.attended, consent_state=consent_state, created_at=now,
            organization=machine.organization, technician_id=identity.technician_id,
            technician_name=identity.technician_name, control_consented=control,
            key_id=identity.key_id, machine_uid=uid, support_code=identity.support_code,
            session_panel=recording == "notice" or shows_session_panel(
                self._settings, managed=not identity.attended, organization=machine.organization),
            tenant_id=tenant_of(machine.tenant_id),
        )
        if self._recordings is not None and recording != "off":
            session.recorded = True  # the end user's dialog says so before consenting
            session.recorder = SessionRecorder(
                self._recordings, session_id=session_id, agent_id=agent_id,
                buffer_bytes=self._settings.recording_buffer_bytes,
                keystrokes=self._settings.recording_keystrokes == "content",
                tenant_id=session.tenant_id)
        if identity.attended:
            session.consent = ConsentBook(self._settings.consent_timeout + 2)  # the dialog first
        record = SessionRecord(id=session_id, agent_id=agent_id, is_managed=session.is_managed,
                               source=identity.method, consent_state=consent_state,
                               technician=identity.technician_name or None, created_at=now,
                               tenant_id=session.tenant_id)
        await self._store.create_session(record)
        previous = self._index.add(session)  # no await between the read and the write
        if previous is not None:
            await self._end(previous, REPLACED)
            if session.ended:  # a newer connection of the agent replaced this one meanwhile
                raise SessionRefused(REPLACED)
        link.outbox.put(conn.accept(session_id))
        if consent_state == CONSENT_PENDING and session.consent is not None:
            first = Ask(identity.technician_id, identity.technician_name, control, first=True)
            session.ask(first, self._settings.consent_timeout)
        self._plugins.session_opened(record)
        await self._audit.record(AuditEvent(
            "session.opened", session_id=session_id, agent_id=agent_id,
            actor=identity.technician_id, client_ip=credential.client_ip,
            tenant_id=session.tenant_id,
            detail={"source": identity.method, "consent_state": consent_state}))
        log.info("agent %s connected (%s), session %s, consent %s", agent_id, identity.method,
                 session_id, consent_state)
        return session

    def _recording_mode(self, machine: Machine) -> str:
        """off, on or notice: the recording policy for this machine's sessions."""
        if self._recordings is None:
            return "off"
        return self._recording_policy.mode(agent_id=machine.agent_id,
                                           organization=machine.organization, tags=machine.tags,
                                           tenant_id=tenant_of(machine.tenant_id))

    async def _decide_consent(self, identity: AgentIdentity, session_id: str,
                              agent_id: str, *, recorded: bool) -> tuple[str, bool]:
        """(consent_state, whether control is consented); the policy hook decides first."""
        control = True
        if identity.technician_id:
            user = await self._store.get_user(identity.technician_id)
            control = user is not None and can_control(user)
        decision = self._plugins.consent_policy(ConsentAsk(
            session_id=session_id, technician_name=identity.technician_name, control=control,
            timeout_secs=self._settings.consent_timeout, agent_id=agent_id,
            method=identity.method, attended=identity.attended,
            recorded=recorded))
        if decision is ConsentDecision.DENY:
            await self._audit.record(AuditEvent("session.consent_denied", session_id=session_id,
                                                agent_id=agent_id, detail={"by": "policy"}))
            raise SessionRefused("the session was refused by the server's consent policy")
        return initial_consent_state(decision, identity.attended), control

    async def join_viewer(self, *, session_id: str, user_id: str, password_version: str,
                          request: Any, client_ip: str | None = None,
                          token_generation: int = 0) -> tuple[Session, Link]:
        """Admit a viewer whose token names ``session_id``; its link holds the response.

        ``password_version`` is the user's password fingerprint when the token was minted:
        a token from before a password change is refused. ``token_generation`` is the
        user's token generation then: a token from before a logout or a revocation is
        refused (the store holds the generation, so every node agrees).

        :raises SessionRefused: with the reason to show the viewer.
        """
        if self._index.closing:
            raise SessionRefused("the server is shutting down")
        check_session_type(request.session_type, viewer=True)
        channel = CHANNEL_OF_TYPE.get(request.session_type)
        codecs = viewer_codecs(request.codecs)
        session = self._index.get(session_id)
        if session is None or session.ended:
            raise SessionRefused("the session is not live")
        if request.agent_id and request.agent_id != session.agent_id:
            raise SessionRefused("the viewer token is for another session")
        if session.pending:
            raise SessionRefused("the session is awaiting the end user's consent")
        if channel is not None:
            user = await self._channel_user(session, user_id, channel)
            refusal = channel_consent_refusal(channel, await self._channel_standing(
                session, user, channel, ask=False))
        else:
            user = await self._viewing_user(session, user_id)
            refusal = consent_refusal(session.standing(user.id), session.technician_name)
        if refusal is not None:
            raise SessionRefused(refusal)
        if not hmac.compare_digest(user.password_fingerprint, password_version):
            raise SessionRefused("the viewer token was issued before a password change")
        factors = await self._store.get_second_factors(user.id)
        if factors.token_generation != token_generation:
            raise SessionRefused("the viewer token was revoked (the user logged out or their "
                                 "sessions were ended)")
        if session.ended:  # it ended while the store answered
            raise SessionRefused("the session is not live")
        if channel is not None:
            return session, await self._open_channel(session, user, channel, client_ip)
        view_only = (request.session_type == pb.VIEW_ONLY or not can_control(user)
                     or not session.control_consented_for(user.id))
        viewer_id = uuid.uuid4().hex
        conn = Connection(Role.SERVER, Role.VIEWER, self._settings.max_message_bytes)
        link = Link(conn, self._settings.viewer_buffer_bytes, viewer_id, client_ip)
        link.actor = user.username
        link.user_id = user.id
        link.codecs = codecs
        link.outbox.put(conn.accept(session_id, session.display_info, view_only=view_only))
        session.viewers[viewer_id] = link
        self._index.touch(session)
        session.tell_participants()  # the end user's panel names them before any picture
        session.start_stream(link)
        await self._audit.record(AuditEvent(
            "viewer.joined", session_id=session_id, agent_id=session.agent_id,
            actor=user.username, client_ip=client_ip,
            tenant_id=session.tenant_id,
            detail={"viewer_id": viewer_id, "view_only": view_only}))
        return session, link

    async def _open_channel(self, session: Session, user: User, channel: Channel,
                            client_ip: str | None) -> Link:
        """Admit a viewer of its own ``channel``: the agent opens a shell for it, or serves
        its file requests, named by its viewer id."""
        viewer_id = uuid.uuid4().hex
        conn = Connection(Role.SERVER, Role.VIEWER, self._settings.max_message_bytes)
        link = Link(conn, self._settings.viewer_buffer_bytes, viewer_id, client_ip)
        link.actor = user.username
        link.user_id = user.id
        if channel is Channel.TERMINAL:
            link.window = Window()
        else:
            link.transfers = TransferBook(self._settings.max_transfer_bytes)
        link.outbox.put(conn.accept(session.session_id, channel=channel))
        session.channels[viewer_id] = link
        self._index.touch(session)
        if channel is Channel.TERMINAL:
            session.agent.send("backstage_open", pb.BackstageOpen(
                viewer_id=viewer_id, technician_name=user.username))
        else:
            session.agent.send("file_open", pb.FileOpen(
                viewer_id=viewer_id, technician_name=user.username))
        session.tell_participants()  # the end user's panel says what is open
        await self._audit.record(AuditEvent(
            OPENED[channel], session_id=session.session_id, agent_id=session.agent_id,
            actor=user.username, client_ip=client_ip,
            detail={"viewer_id": viewer_id, "technician": user.username}))
        log.info("%s %s opened on session %s for %s", channel.value, viewer_id,
                 session.session_id, user.username)
        return link

    async def _channel_user(self, session: Session, user_id: str, channel: Channel) -> User:
        """The user, if they may open ``channel`` on this session's machine at all now.

        :raises SessionRefused: they may not (gone, disabled, no permission for it, another
            organization).
        """
        user = await self._store.get_user(user_id)
        refusal = channel_refusal(channel, user, session.organization,
                                  tenant_id=session.tenant_id)
        if refusal is not None:
            raise SessionRefused(refusal)
        assert user is not None
        return user

    async def _channel_standing(self, session: Session, user: User, channel: Channel, *,
                                ask: bool) -> Standing:
        """Where ``user`` stands for ``channel`` (a terminal, files) on this session's
        machine: the consent policy first (it may forbid it per machine, or allow it
        without asking), then the end user of an attended session, who is asked now when
        ``ask`` and not yet asked.

        :raises SessionRefused: the policy forbids it, or asks where nobody can answer.
        """
        decision = self._plugins.consent_policy(ConsentAsk(
            session_id=session.session_id, technician_name=user.username, control=False,
            timeout_secs=self._settings.consent_timeout, agent_id=session.agent_id,
            method=session.source, attended=session.consent is not None,
            organization=session.organization, backstage=channel is Channel.TERMINAL,
            file_transfer=channel is Channel.FILES))
        question = Ask(user.id, user.username, False, channel=channel)
        what = {Channel.TERMINAL: "backstage terminals", Channel.FILES: "file transfer"}[channel]
        detail = {"technician": user.username, channel.value: True}
        if decision is ConsentDecision.DENY:  # asked again each time: not kept in the book
            await self._audit.record(AuditEvent(
                "session.consent_denied", session_id=session.session_id,
                agent_id=session.agent_id, actor=user.username, detail={"by": "policy", **detail}))
            raise SessionRefused(f"the server's consent policy forbids {what} on this machine")
        if session.consent is None:  # managed: nobody to ask
            if decision is ConsentDecision.ASK:
                raise SessionRefused(f"the consent policy asks the end user before {what}, "
                                     "and this managed session has nobody to ask")
            return Standing.ADMITTED
        if decision is ConsentDecision.APPROVE:
            if session.standing(user.id, channel=channel) is not Standing.ADMITTED:
                session.consent.admit(question)
                await self._audit.record(AuditEvent(
                    "session.consent_granted", session_id=session.session_id,
                    agent_id=session.agent_id, actor=user.username,
                    detail={"by": "policy", **detail}))
            return Standing.ADMITTED
        standing = session.standing(user.id, channel=channel)
        if standing is Standing.UNASKED and ask and not session.ended:
            session.ask(question, self._settings.consent_timeout)  # no await since the read
            await self._audit.record(AuditEvent(
                "session.consent_requested", session_id=session.session_id,
                agent_id=session.agent_id, actor=user.username, detail=detail))
            log.info("asking the end user of session %s to allow %s for %s",
                     session.session_id, what, user.username)
            standing = session.standing(user.id, channel=channel)
        return standing

    async def _viewing_user(self, session: Session, user_id: str) -> User:
        """The user, if they may view this session's machine at all now.

        :raises SessionRefused: they may not (gone, disabled, no ``view``, another organization).
        """
        user = await self._store.get_user(user_id)
        refusal = viewing_refusal(user, session.organization, tenant_id=session.tenant_id)
        if refusal is not None:
            raise SessionRefused(refusal)
        assert user is not None
        return user

    async def admission(self, session_id: str, user_id: str, *,
                        channel: Channel | None = None) -> Standing:
        """Where ``user_id`` stands with the end user of a live, consented session; a first
        request of a technician the end user has not been asked about asks them now.
        With a ``channel``: where they stand for a terminal on the machine, or for its
        files (asked the same way, and separately: viewing is no consent to either).

        The consent policy hook decides first, as for the session's own technician.

        :raises NotReady: the session is not live or awaits its own consent.
        :raises SessionRefused: the user may not view this machine at all (or, for
            a ``channel``, open it: no permission, or the policy forbids it).
        """
        session = self._index.get(session_id)
        if session is None or session.ended:
            raise NotReady("the session is not live")
        if session.pending:
            raise NotReady("the session is still awaiting the end user's consent")
        if channel is not None:
            return await self._channel_standing(
                session, await self._channel_user(session, user_id, channel), channel, ask=True)
        user = await self._viewing_user(session, user_id)
        standing = session.standing(user.id)
        if standing is not Standing.UNASKED or session.ended:
            return standing
        assert session.consent is not None
        ask = Ask(user.id, user.username, can_control(user))
        decision = self._plugins.consent_policy(ConsentAsk(
            session_id=session_id, technician_name=ask.name, control=ask.control,
            timeout_secs=self._settings.consent_timeout, agent_id=session.agent_id,
            method=session.source, attended=True))
        if decision is ConsentDecision.DENY:
            session.consent.refuse(ask, Standing.DENIED)
            await self._audit.record(AuditEvent("session.consent_denied", session_id=session_id,
                                                agent_id=session.agent_id, actor=user.username,
                                                detail={"by": "policy", "technician": ask.name}))
        elif decision is ConsentDecision.APPROVE:
            session.consent.admit(ask)
            await self._audit.record(AuditEvent("session.consent_granted", session_id=session_id,
                                                agent_id=session.agent_id, actor=user.username,
                                                detail={"by": "policy", "technician": ask.name}))
        else:
            # No await since the standing was read: asked once.
            session.ask(ask, self._settings.consent_timeout)
            await self._audit.record(AuditEvent("session.consent_requested", session_id=session_id,
                                                agent_id=session.agent_id, actor=user.username,
                                                detail={"technician": ask.name,
                                                             "control": ask.control}))
            log.info("asking the end user of session %s to admit %s", session_id, ask.name)
        return session.standing(user.id)


async def write_all_offline(store: Store, index: SessionIndex, agent_ids: list[str],
                            ended: Any) -> None:
    """:func:`write_offline` for many machines in one write."""
    await store.set_machines_offline([a for a in agent_ids if index.for_agent(a) is None], ended)


async def write_offline(store: Store, index: SessionIndex, agent_id: str, ended: Any) -> None:
    """Mark a machine offline, unless its agent has come back meanwhile (a write that waited
    out a database outage runs against the live state as it is then)."""
    if index.for_agent(agent_id) is None:
        await store.set_machine_status(agent_id, "offline", ended)

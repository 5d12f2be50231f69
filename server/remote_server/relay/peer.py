"""Driving one socket: first message, authentication, then reader, writer and watchdog.

Nothing here knows Starlette: a socket is a :class:`Transport` (receive,
send, close), so the same drivers serve any WebSocket server and tests can
drive them directly. Each socket has three tasks: the reader (this
coroutine), the writer draining the link's outbox, and a reaper cutting off a
socket that does not finish closing in time; the registry's
:class:`~.silence.SilenceWatch` closes a peer silent longer than the heartbeat
timeout.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any, Protocol

import anyio
from anyio.abc import TaskGroup

from remote_core.errors import SessionRefused
from remote_core.protocol import (
    CloseCode,
    Connection,
    Dropped,
    Inbound,
    LocalProtocolError,
    RemoteProtocolError,
    Role,
    pb,
)
from remote_core.records import AuditEvent
from remote_core.types import ENDED_BY_END_USER

from ..observe.counters import RELAY, auth_failed
from ..observe.logs import bind_peer
from .auth import Unavailable, looks_like_support_code
from .link import Link
from .outbox import Close
from .registry import Registry
from .session import Session
from .silence import SilenceWatch

__all__ = ["CodeLimiter", "InlineAnswer", "Transport", "ViewerVerifier", "serve_agent",
           "serve_viewer"]

log = logging.getLogger(__name__)

CLOSE_GRACE = 5.0
"""Seconds a closing socket has to take its last messages before it is cut off."""


InlineAnswer = Callable[[bytes], "bytes | None"]
"""A message's reply, written as the message is read (``b""``: taken, with no reply); None:
deliver it to ``receive``."""


class Transport(Protocol):
    """One accepted WebSocket."""

    async def receive(self) -> bytes | str | None:
        """The next message; ``None`` once the peer has gone."""

    async def send(self, data: bytes) -> None: ...

    async def close(self, code: int, reason: str) -> None: ...

    def answer_inline(self, answer: InlineAnswer | None) -> None:
        """Have the socket reply itself to what ``answer`` answers, as each binary message
        is read: no task woken, nothing queued (``None``: stop). A transport that cannot
        ignores it; every message then comes to :meth:`receive`, as it would anyway."""

    def send_now(self, data: bytes) -> bool:
        """Write ``data`` at once if the socket takes it now (open, its buffer not full),
        as :meth:`send` would; ``False``: it goes through :meth:`send` in its turn. A
        transport that cannot always says ``False``."""


class CodeLimiter(Protocol):
    """The support-code attempt limiter the REST API shares (SPEC 8)."""

    async def check_code_attempt(self, client_ip: str) -> float | None: ...

    async def record_code_result(self, client_ip: str, ok: bool) -> bool:
        """True when this result locked the address out."""
        ...


ViewerVerifier = Callable[[str, str | None], tuple[str, str, str, int]]
"""``(token, session_id or None) -> (user_id, session_id, password fingerprint, token
generation)``; raises
:class:`SessionRefused`."""


# -- the first message ---------------------------------------------------------------------
async def _first_request(transport: Transport, conn: Connection, wait: float) -> Any | None:
    """The peer's ``SessionRequest``, or None after closing the socket for its fault."""
    with anyio.move_on_after(wait):
        data = await transport.receive()
        if data is None:
            return None
        try:
            event = conn.receive_data(data)
            assert isinstance(event, Inbound)
            return event.payload()
        except RemoteProtocolError as exc:
            await transport.close(exc.close_code, exc.reason[:120])
            return None
    await transport.close(CloseCode.POLICY_VIOLATION,
                          f"no session_request within {wait:g} s")
    return None


async def _reject(transport: Transport, conn: Connection, error: str) -> None:
    try:
        await transport.send(conn.reject(error))
        await transport.close(CloseCode.POLICY_VIOLATION, error[:120])
    except Exception:
        log.debug("peer left before its rejection was sent", exc_info=True)


# -- the tasks every socket runs ------------------------------------------------------------------
async def _writer(transport: Transport, link: Link, group: TaskGroup) -> None:
    """Drain the outbox; after the close frame (or a failed send) stop the socket's tasks."""
    try:
        while True:
            item = await link.outbox.get()
            if isinstance(item, Close):
                await transport.close(item.code, item.reason)
                break
            await transport.send(item)
    except Exception:
        log.debug("send to %s failed; the peer is gone", link.id, exc_info=True)
    group.cancel_scope.cancel()


async def _reaper(link: Link, group: TaskGroup) -> None:
    """Once the link is closing, give its writer a grace period, then end the socket.

    A peer that stopped reading would otherwise keep its writer waiting forever.
    """
    await link.outbox.closing.wait()
    await anyio.sleep(CLOSE_GRACE)
    group.cancel_scope.cancel()


def _dropped(link: Link, kind: str, why: str, *, counted: bool = False) -> None:
    """Count (unless the protocol layer already did) and log a message that was not relayed."""
    if not counted:
        link.conn.dropped[kind] += 1
    count = link.conn.dropped[kind]
    level = logging.WARNING if count == 1 else logging.DEBUG
    log.log(level, "dropped %s from %s (%s); %d so far", kind, link.id, why, count)


def _ack(beat: Any) -> Any:
    return pb.HeartbeatAck(client_timestamp=beat.timestamp,
                           server_timestamp=int(time.time() * 1000))


def _heartbeat(link: Link, event: Inbound) -> str | None:
    link.send("heartbeat_ack", _ack(event.payload()))
    return None


def _inline_answers(link: Link, alone: Callable[[], bool],
                    status: Callable[[Any], bool],
                    video: Callable[[bytes, int], None],
                    sent_on: Callable[[], bool]) -> InlineAnswer:
    """An agent's video frames relayed while every viewer's outbox is empty (``sent_on``),
    heartbeats answered, and status reports with nothing new taken (``status``), where
    they are read. Video is the relay's hot path, and the others are what an idle fleet
    says (10,000 agents: 667 heartbeats and 167 reports a second); the reader's path costs
    a task switch on each side of the outbox. A frame that finds an outbox still holding
    one takes that path: it reads the agent a message at a time, so a burst waits in the
    agent's socket while the viewers' writers drain, not in an outbox that would drop it."""
    conn = link.conn

    def answer(data: bytes) -> bytes | None:
        if link.closed:
            return None
        offset = conn.video_offset(data)
        if offset is not None:  # no reply: it may go out whatever waits for the agent
            if not sent_on():
                return None
            link.last_heard = time.monotonic()
            RELAY.frames_inline += 1
            video(data, offset)
            return b""
        if link.outbox or not alone():  # nor before what the server queued for the
            return None  # peer, or what another peer's message brings
        message = conn.idle_message(data)
        if message is None:
            return None
        kind, payload = message
        if kind == "heartbeat":
            link.last_heard = time.monotonic()
            RELAY.heartbeats_inline += 1
            return conn.send("heartbeat_ack", _ack(payload))
        if not status(payload):
            return None
        link.last_heard = time.monotonic()
        RELAY.reports_inline += 1
        return b""

    return answer


def _goodbye(link: Link, event: Inbound) -> str | None:
    reason: str = event.payload().reason[:200]
    link.close("goodbye", notify=False)
    if reason == ENDED_BY_END_USER:  # the end user's End session, audited as such
        return reason
    return "peer said goodbye" + (f": {reason}" if reason else "")


CONNECTION_HANDLERS: Mapping[str, Callable[[Link, Inbound], str | None]] = {
    "heartbeat": _heartbeat,
    "disconnect": _goodbye,
}
"""What every socket answers itself, whoever sent it; a returned reason ends the socket."""


async def _run(transport: Transport, link: Link, watch: SilenceWatch,
               read: Callable[[], Awaitable[str]],
               extras: Sequence[Callable[[], Coroutine[Any, Any, None]]] = (),
               inline: InlineAnswer | None = None) -> str:
    """Run reader and writer (and ``extras``, the session's own tasks) under ``watch``
    until the socket ends; return why it ended. ``inline``: what the socket answers as it
    reads (an agent's)."""
    reason = ""
    watch.watch(link)
    if inline is not None:
        transport.answer_inline(inline)
    link.outbox.direct = transport.send_now
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_writer, transport, link, group)
            group.start_soon(_reaper, link, group)
            for extra in extras:
                group.start_soon(extra)
            reason = await read()
            if not link.closed:
                group.cancel_scope.cancel()  # the peer left: nothing more to send
    finally:
        link.outbox.direct = None
        transport.answer_inline(None)
        watch.forget(link)
    reason = reason or link.close_reason or "connection closed"
    log.debug("socket of %s ended: %s", link.id, reason)
    return reason


async def _read_loop(transport: Transport, link: Link,
                     handle: Callable[[Inbound], Awaitable[str | None]],
                     video: Callable[[bytes, int], None] | None = None) -> str:
    """Read until the peer leaves or breaks the protocol; return why reading stopped.

    :param video: takes a video frame the connection accepts, as it came (the hot path).
    """
    conn = link.conn
    while True:
        data = await transport.receive()
        if data is None:  # after our own close frame, the reason is ours
            return link.close_reason or "peer disconnected"
        link.last_heard = time.monotonic()
        if video is not None and type(data) is bytes:
            offset = conn.video_offset(data)
            if offset is not None:
                video(data, offset)
                continue
        try:
            event = conn.receive_data(data)
            if isinstance(event, Dropped):
                _dropped(link, event.kind, event.reason, counted=True)
                continue
            answer = CONNECTION_HANDLERS.get(event.kind)
            if answer is not None:
                ended = answer(link, event)
                if ended is not None:
                    return ended
                continue
            try:
                why = await handle(event)
            except (RemoteProtocolError, LocalProtocolError):
                raise
            except Exception:  # a store hiccup must not cost the peer its session
                log.exception("handling %s from %s failed", event.kind, link.id)
                continue
            if why is not None:
                _dropped(link, event.kind, why)
        except RemoteProtocolError as exc:
            link.close(exc.reason, exc.close_code, notify=False, drain=False)
            return f"protocol error: {exc.reason}"
        except LocalProtocolError:
            return "connection closed"


# -- agents ---------------------------------------------------------------------------------------
async def serve_agent(transport: Transport, registry: Registry, limiter: CodeLimiter, *,
                      client_ip: str, machine_uid: str | None = None) -> None:
    """Serve one accepted ``/ws/agent`` socket to its end."""
    settings = registry.settings
    registry.socket_opened()
    try:
        first = Connection(Role.SERVER, Role.AGENT, settings.max_message_bytes)
        request = await _first_request(transport, first, settings.first_message_timeout)
        if request is None:
            return
        limited = looks_like_support_code(request.session_token)
        if limited:
            wait = await limiter.check_code_attempt(client_ip)
            if wait is not None:
                await _reject(transport, first, "too many support-code attempts; retry in "
                                                f"{math.ceil(wait)} s")
                return
        try:
            session = await registry.open_agent(request, client_ip=client_ip,
                                                machine_uid=machine_uid)
        except SessionRefused as exc:
            if (limited and not isinstance(exc, Unavailable)
                    and await limiter.record_code_result(client_ip, False)):
                await registry.audit.record(AuditEvent(
                    kind="support_code.lockout", client_ip=client_ip,
                    detail={"via": "agent socket"}))
            if not isinstance(exc, Unavailable):
                auth_failed("support_code" if limited else "agent_credential")
            log.info("agent from %s refused: %s", client_ip, exc)
            await _reject(transport, first, str(exc))
            return
        except Exception:
            log.exception("could not open a session for the agent from %s", client_ip)
            await _reject(transport, first, "the server could not open the session")
            return
        if limited:
            await limiter.record_code_result(client_ip, True)
        bind_peer(session_id=session.session_id, agent_id=session.agent_id)
        await _serve_session_agent(transport, registry, session)
    finally:
        registry.socket_closed()


async def _serve_session_agent(transport: Transport, registry: Registry,
                               session: Session) -> None:
    link = session.agent

    async def handle(event: Inbound) -> str | None:
        return await registry.on_agent_message(session, event)

    async def read() -> str:
        return await _read_loop(transport, link, handle, session.fan_out_video)

    async def consent() -> None:
        await registry.consent_timer(session)

    reason = "agent disconnected"
    try:
        extras = [consent] if session.consent is not None else []
        if session.recorder is not None:
            extras.append(session.recorder.run)  # writes the recording's segments
        # video relayed inline while the outboxes are empty; heartbeats and reports
        # taken inline while no viewer watches
        inline = _inline_answers(link, alone=lambda: not session.viewers,
                                 status=lambda status: registry.status_heard(session, status),
                                 video=session.fan_out_video,
                                 sent_on=lambda: not any(viewer.outbox for viewer
                                                         in session.viewers.values()))
        reason = await _run(transport, link, registry.silence, read, extras, inline)
    finally:
        with anyio.CancelScope(shield=True):
            await registry.agent_gone(session, reason)


# -- viewers --------------------------------------------------------------------------------------
async def serve_viewer(transport: Transport, registry: Registry, verify: ViewerVerifier, *,
                       client_ip: str, session_hint: str | None = None) -> None:
    """Serve one accepted ``/ws/viewer`` socket to its end.

    :param session_hint: a session id the client named in the URL, checked against the token.
    """
    settings = registry.settings
    registry.socket_opened()
    try:
        first = Connection(Role.SERVER, Role.VIEWER, settings.max_message_bytes)
        request = await _first_request(transport, first, settings.first_message_timeout)
        if request is None:
            return
        try:
            try:
                user_id, session_id, minted_for, generation = verify(request.session_token,
                                                                     session_hint)
            except SessionRefused:
                auth_failed("viewer_token")
                raise
            session, link = await registry.join_viewer(
                session_id=session_id, user_id=user_id, password_version=minted_for,
                token_generation=generation,
                request=request, client_ip=client_ip)
        except SessionRefused as exc:
            log.info("viewer from %s refused: %s", client_ip, exc)
            await _reject(transport, first, str(exc))
            return
        except Exception:
            log.exception("could not admit the viewer from %s", client_ip)
            await _reject(transport, first, "the server could not admit the viewer")
            return

        bind_peer(session_id=session.session_id, agent_id=session.agent_id, viewer_id=link.id)

        async def handle(event: Inbound) -> str | None:
            return await registry.on_viewer_message(session, link, event)

        async def read() -> str:
            return await _read_loop(transport, link, handle)

        reason = "viewer disconnected"
        try:
            reason = await _run(transport, link, registry.silence, read)
        finally:
            with anyio.CancelScope(shield=True):
                await registry.leave_viewer(session, link, reason)
    finally:
        registry.socket_closed()

"""One connection of the agent to the server, from ``session_request`` to the end.

The socket is read by one task; heartbeats, status reports, display changes,
the cursor, the video stream and the consent question each run in their own
task, and every message goes out through :meth:`AgentSession.send`. Input is
applied in a worker thread, one event at a time, in arrival order. Nothing
the read loop awaits may take long: it is what tells the heartbeat task that
the server is still there.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc

from remote_core.errors import SessionRefused
from remote_core.protocol import (
    MAX_CLIPBOARD_BYTES,
    Connection,
    Dropped,
    Inbound,
    RemoteProtocolError,
    Role,
    pb,
)
from remote_core.textrules import escaped
from remote_core.types import ENDED_BY_END_USER, ConsentAsk, DisplayDesc
from remote_core.wsclient import WebSocketClient, connect, ws_url

from . import __version__
from .backstage import Backstage, ShellSpec, shell_spec
from .bulk import BulkLane, PictureLoad, unsent_bytes
from .chat import ChatChannel, chat_message
from .config import AgentConfig
from .devices import Devices
from .file_roots import Roots, default_roots
from .files import FileService
from .pointer import PointerWatch
from .presence import Presence
from .status import agent_status, display_info
from .stream import StreamState
from .streamer import Streamer
from .update import Offer, Updater
from .update_download import tls_context

__all__ = ["HANDLERS", "NOT_ACTED_ON", "AgentSession", "Ending", "Timing"]

log = logging.getLogger(__name__)


def _first(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first leaf of a task group's failure: the socket closing, usually."""
    first: BaseException = group
    while isinstance(first, BaseExceptionGroup):
        first = first.exceptions[0]
    return first


class Ending(enum.Enum):
    CLOSED = "closed"
    UNINSTALL = "uninstall"
    RESTART = "restart"
    UPDATE = "update"
    """A new build is installed: restart into it with ``--post-update``."""


@dataclass(frozen=True)
class Timing:
    """Intervals of the periodic work (seconds); tests shorten them."""

    heartbeat: float = 15.0
    silence: float = 45.0
    status: float = 60.0
    displays: float = 3.0
    cursor: float = 1 / 30
    cursor_still: float = 0.1
    """Poll interval once the pointer has been still for a second."""
    clipboard: float = 1.0
    update_check: float = 3600.0
    """How often a managed agent asks ``GET /api/version`` while idle (SPEC 8)."""


class AgentSession:
    """Connect, authenticate, then serve the server's requests until the socket ends.

    :param token: a ``cak_`` key (managed) or a support code (attended).
    :param local_host: the address to connect from (default: the system's choice).
    """

    def __init__(self, config: AgentConfig, token: str, devices: Devices, *,
                 machine_uid: str | None = None, timing: Timing | None = None,
                 chat: ChatChannel | None = None, window: int = 3,
                 updater: Updater | None = None, presence: Presence | None = None,
                 local_host: str | None = None, plugins: Sequence[str] = (),
                 shell: Callable[[], ShellSpec] | None = None,
                 file_roots: Sequence[str] = ()) -> None:
        self.config = config
        self.plugins = tuple(plugins)  # "name version" each, reported in AgentStatus
        self.local_host = local_host
        self.token = token
        self.devices = devices
        self.machine_uid = machine_uid
        self.timing = timing or Timing()
        self.chat = chat or ChatChannel()
        self.presence = presence or Presence()
        self.updater = updater
        self.conn = Connection(Role.AGENT, Role.SERVER)
        self.state = StreamState(codecs=devices.codecs)
        self.displays: list[DisplayDesc] = []
        load = PictureLoad()
        self.streamer = Streamer(devices, self.state, self._send_bytes, lambda: self.displays,
                                 window=window, load=load, unsent=self._unsent)
        self.backstage = Backstage(shell or (lambda: shell_spec(attended=True)), self.send)
        """The BACKSTAGE terminals of this connection (``shell`` makes each one's shell)."""
        self.lane = BulkLane(self._write, self._unsent, load)
        """Every message goes out through it; file data yields to the rest (:mod:`.bulk`)."""
        roots = tuple(file_roots) or None
        self.files = FileService(lambda: Roots(roots or default_roots()), self.send,
                                 self._send_bulk)
        """The FILE_TRANSFER viewers of this connection (``file_roots``: what they see)."""
        self.session_id = ""
        self.connected_at: float | None = None
        self.ending = Ending.CLOSED
        self._ws: WebSocketClient | None = None
        self._input_limiter = anyio.CapacityLimiter(1)
        self._last_heard = time.monotonic()
        self._cursor_shape: Any | None = None
        self._cursor_position: tuple[int, int] | None = None
        self._cursor_due = True
        self._pointer_moved_at = 0.0
        self._pointer: PointerWatch | None = None
        self._clipboard_text: str | None = None
        self._group: anyio.abc.TaskGroup | None = None
        self._asking = False
        self.ended_by_user = False
        """End session was pressed: no more picture or input, the goodbye is on its way."""

    # -- sending -------------------------------------------------------------------------
    async def _write(self, data: bytes) -> None:
        assert self._ws is not None
        await self._ws.send(data)

    def _unsent(self) -> int:
        """What the kernel has not sent yet on the socket (0 when it cannot be told)."""
        return unsent_bytes(self._ws.raw_socket if self._ws is not None else None)

    async def _send_bytes(self, data: bytes) -> None:
        await self.lane.urgent(data)

    async def send(self, kind: str, payload: Any) -> None:
        await self._send_bytes(self.conn.send(kind, payload))

    async def _send_bulk(self, kind: str, payload: Any) -> None:
        """File data and upload acknowledgements: after the picture and everything else
        (:class:`~.bulk.BulkLane`)."""
        await self.lane.bulk(self.conn.send(kind, payload))

    # -- the connection --------------------------------------------------------------------
    async def run(self) -> Ending:
        """Serve one connection; raise :class:`SessionRefused` (the server said no) or a
        transport error when it fails."""
        headers = [("X-Machine-UID", self.machine_uid)] if self.machine_uid else []
        url = ws_url(self.config.server, "/ws/agent")
        # Loading the trusted roots costs tens of milliseconds of CPU: only for TLS.
        context = tls_context(self.config.ca_bundle) if url.startswith("wss:") else None
        ws = await connect(url, headers, ssl_context=context, local_host=self.local_host)
        self._ws = ws
        try:
            await self._handshake()
            self.displays = await anyio.to_thread.run_sync(self.devices.capture.displays)
            await self.send("display_info", display_info(self.displays))
            await self._report_status()
            if self.updater is not None:
                await self.updater.connected(self._send_update_status)
                if self.updater.installed:  # the connection broke as it was installed
                    await self.updater.restarting(self._send_update_status)
                    self.ending = Ending.UPDATE
                    return self.ending
            self.chat.attach(self._send_chat)
            self.presence.opened()
            try:
                async with anyio.create_task_group() as group:
                    self._group = group
                    for task in (self._heartbeats, self._status_reports, self._display_watch,
                                 self._cursor_watch, self._clipboard_watch, self.streamer.run,
                                 self._update_checks):
                        group.start_soon(task)
                    await self._read()
                    group.cancel_scope.cancel()
            except BaseExceptionGroup as group_error:
                raise _first(group_error) from group_error
        finally:
            self.chat.detach()
            self.presence.clear()
            self.presence.closed()
            with anyio.CancelScope(shield=True):
                await self.backstage.close_all()  # every shell of this connection dies with it
                await self.files.close_all()  # partial uploads stay for a resume
                await ws.close()
        return self.ending

    async def _handshake(self) -> None:
        assert self._ws is not None
        await self._send_bytes(self.conn.send("session_request", pb.SessionRequest(
            agent_id=self.config.agent_id, session_token=self.token,
            session_type=pb.SCREEN_CONTROL, client_version=__version__)))
        with anyio.fail_after(30):
            data = await self._ws.receive()
        event = self.conn.receive_data(data)
        assert isinstance(event, Inbound)
        response = event.payload()
        if not response.success:
            raise SessionRefused(response.error or "refused without a reason")
        self.conn.authenticated()
        self.session_id = response.session_id
        self.connected_at = time.monotonic()
        log.info("connected: session %s", self.session_id)

    async def _read(self) -> None:
        assert self._ws is not None
        while True:
            data = await self._ws.receive()
            self._last_heard = time.monotonic()
            try:
                event = self.conn.receive_data(data)
            except RemoteProtocolError as exc:
                log.warning("server broke the protocol: %s", exc.reason)
                return
            if isinstance(event, Dropped):
                log.debug("ignored %s from the server: %s", event.kind, event.reason)
                continue
            if event.kind == "disconnect":
                log.info("server said goodbye: %s", event.payload().reason)
                return
            if await self._handle(event.kind, event.payload()):
                return

    def end_by_user(self) -> None:
        """The end user pressed End session (call on the event loop): capture and input
        stop here and now, then the server is told, which ends the session for every
        viewer and audits it as ended by the end user."""
        if self._group is None or self.ended_by_user:
            return
        self.ended_by_user = True
        self.state.viewers.clear()
        self.state.choose()
        self.streamer.poke()
        log.warning("session %s ended by the end user", self.session_id)
        self._group.start_soon(self._goodbye)

    async def _goodbye(self) -> None:
        with anyio.move_on_after(2):
            await self.send("disconnect", pb.Disconnect(reason=ENDED_BY_END_USER))
        assert self._group is not None
        self._group.cancel_scope.cancel()

    # -- handlers ------------------------------------------------------------------------
    async def _handle(self, kind: str, message: Any) -> bool:
        """Act on one message by the handler table; ``True`` ends the session."""
        if self.ended_by_user:  # nothing more is shown or applied
            return False
        handler = HANDLERS.get(kind)
        if handler is None:
            log.debug("%s from the server is not acted on by this agent", kind)
            return False
        return bool(await handler(self, message))

    async def _on_video_ack(self, message: pb.VideoAck) -> None:
        self.streamer.ack(message.sequence)

    async def _on_mouse_event(self, message: Any) -> None:
        await self._inject("mouse_event", message)

    async def _on_key_event(self, message: Any) -> None:
        await self._inject("key_event", message)

    async def _on_special_key(self, message: Any) -> None:
        await self._inject("special_key", message)

    async def _on_start_stream(self, message: pb.StartStream) -> None:
        self.presence.panel(message.session_panel)  # the server's policy, before any picture
        self.state.start(message.viewer_id, message.display_id, message.codecs)
        self._cursor_due = True  # the new viewer needs the shape and position too
        if self._pointer is not None:
            self._pointer.wake()
        self.streamer.poke()

    async def _on_stop_stream(self, message: pb.StopStream) -> None:
        self.state.stop(message.viewer_id)
        self.streamer.poke()

    async def _on_switch_display(self, message: pb.SwitchDisplay) -> None:
        if self.devices.display(message.display_id, self.displays) is None:
            log.warning("SwitchDisplay to unknown display %d ignored", message.display_id)
            return
        self.state.switch(message.display_id)
        self.streamer.poke()

    async def _on_quality_settings(self, message: pb.QualitySettings) -> None:
        try:
            self.state.set_quality(message)
        except ValueError as exc:
            log.warning("QualitySettings ignored: %s", exc)
        self.streamer.poke()

    async def _on_consent_request(self, message: Any) -> None:
        self._ask_consent(message)

    async def _on_participants(self, message: Any) -> None:
        self.presence.told(message)

    async def _on_chat_message(self, message: Any) -> None:
        self.chat.received(message)

    async def _on_clipboard_data(self, message: Any) -> None:
        await self._paste(message)

    async def _on_clipboard_request(self, message: Any) -> None:
        await self._send_clipboard(force=True)

    async def _on_update_info(self, message: Any) -> None:
        self._offered(Offer.from_info(message))

    async def _on_backstage_open(self, message: Any) -> None:
        assert self._group is not None
        await self.backstage.open(self._group, message)

    async def _on_backstage_data(self, message: Any) -> None:
        self.backstage.data(message)

    async def _on_backstage_resize(self, message: Any) -> None:
        self.backstage.resize(message)

    async def _on_backstage_ack(self, message: Any) -> None:
        self.backstage.ack(message)

    async def _on_backstage_close(self, message: Any) -> None:
        assert self._group is not None
        self._group.start_soon(self.backstage.close, message.viewer_id)  # the reader reads on

    async def _on_file_open(self, message: Any) -> None:
        assert self._group is not None
        await self.files.open(self._group, message)

    async def _on_file_request(self, message: Any) -> None:
        self.files.request(message)

    async def _on_file_data(self, message: Any) -> None:
        self.files.data(message)

    async def _on_file_ack(self, message: Any) -> None:
        self.files.ack(message)

    async def _on_file_close(self, message: Any) -> None:
        await self.files.close(message.viewer_id)

    async def _inject(self, kind: str, message: Any) -> None:
        sink = self.devices.input
        if sink is None or self.ended_by_user:
            return
        display = self.streamer.streaming_display or self.devices.display(
            self.state.display_id, self.displays)

        if kind == "mouse_event":
            self._pointer_moved_at = time.monotonic()  # poll the cursor closely again

        def apply() -> None:
            if kind == "mouse_event":
                if display is not None:
                    sink.mouse(message, display)
            elif kind == "key_event":
                sink.key(message)
            else:
                sink.special_key(message)

        try:
            await anyio.to_thread.run_sync(apply, limiter=self._input_limiter)
        except ValueError as exc:
            log.warning("%s ignored: %s", kind, exc)

    def _ask_consent(self, request: Any) -> None:
        """Ask beside the read loop, which must go on reading while the user decides.

        Awaited in the read loop, the open dialog stopped the heartbeat acks from
        being read, so a user who took longer than the heartbeat timeout found
        the session declared silent and gone when they allowed it.
        """
        if self._asking:
            log.warning("a second ConsentRequest while the question is open ignored")
            return
        assert self._group is not None
        self._asking = True
        self._group.start_soon(self._consent, request)

    async def _consent(self, request: Any) -> None:
        """Ask the user, send the answer.

        Ending the session waits for an open dialog (it denies itself at
        ``timeout_secs``) rather than abandoning it, so two never stack up.
        """
        try:
            prompt = self.devices.prompt
            if prompt is None:
                granted, reason = False, "nobody at this machine can be asked"
            else:
                ask = ConsentAsk(session_id=request.session_id,
                                 technician_name=request.technician_name,
                                 control=request.access_mode == pb.CONSENT_CONTROL,
                                 timeout_secs=max(1, request.timeout_secs or 60),
                                 connected=tuple(map(str, self.presence.connected)),
                                 organization=escaped(request.organization, 64),
                                 recorded=request.recorded, backstage=request.backstage,
                                 file_transfer=request.file_transfer)
                granted, reason = await anyio.to_thread.run_sync(prompt.ask, ask)
        finally:
            self._asking = False
        log.info("consent %s%s to %s", "granted" if granted else "denied",
                 f" ({reason})" if reason else "",
                 escaped(request.technician_name, 64) or "a technician")
        await self.send("consent_response", pb.ConsentResponse(
            session_id=request.session_id, granted=granted, reason=reason))

    async def _admin(self, command: Any) -> bool:
        if command.command == pb.ADMIN_UNINSTALL:
            log.warning("uninstall ordered by the server: %s", command.reason or "no reason")
            self.ending = Ending.UNINSTALL
            return True
        if command.command == pb.ADMIN_RESTART:
            log.warning("restart ordered by the server: %s", command.reason or "no reason")
            self.ending = Ending.RESTART
            return True
        if command.command == pb.ADMIN_UPDATE:
            offer = self.updater.offer if self.updater is not None else None
            if offer is None:
                await self._send_update_status(pb.UpdateStatus(
                    current_version=__version__, state=pb.UPDATE_FAILED,
                    error_message="ADMIN_UPDATE without an UpdateInfo naming the release"))
            else:
                log.warning("update to %s ordered by the server", offer.version)
                self._start_update(offer)
        return False

    # -- self-update -----------------------------------------------------------------------
    async def _send_update_status(self, status: Any) -> None:
        await self.send("update_status", status)

    def _offered(self, offer: Offer) -> None:
        """Remember the release; a mandatory one is installed at once (SPEC 9)."""
        if self.updater is None:
            return
        self.updater.offer = offer
        if offer.mandatory:
            self._start_update(offer)

    def _start_update(self, offer: Offer) -> None:
        if self._group is not None:
            self._group.start_soon(self._update, offer)

    async def _update(self, offer: Offer) -> None:
        """Install ``offer``, waiting until nobody watches unless it is mandatory."""
        assert self.updater is not None
        if self.updater.busy:
            return
        while self.state.active and not offer.mandatory:  # noqa: ASYNC110 - no event to await
            await anyio.sleep(1)
        if await self.updater.run(offer, self._send_update_status):
            self.ending = Ending.UPDATE
            assert self._group is not None
            self._group.cancel_scope.cancel()

    async def _update_checks(self) -> None:
        """A managed agent polls for a newer release while idle (SPEC 8: hourly)."""
        if self.updater is None or self.updater.attended or self.updater.files is None:
            return
        while True:
            await anyio.sleep(self.timing.update_check)
            if self.state.active or self.updater.busy:
                continue
            offer = await self.updater.check()
            if offer is not None:
                log.info("release %s found by the update check", offer.version)
                await self._update(offer)

    # -- clipboard (text) ------------------------------------------------------------------
    async def _paste(self, message: Any) -> None:
        board = self.devices.clipboard
        if board is None or message.format != pb.CLIPBOARD_TEXT:
            log.debug("clipboard data of format %d not applied", message.format)
            return
        if len(message.data) > MAX_CLIPBOARD_BYTES:
            await self._clipboard_refused(len(message.data), "the technician's clipboard")
            return
        try:
            text = message.data.decode("utf-8")
        except UnicodeDecodeError:
            log.warning("clipboard text that is not UTF-8 ignored")
            return
        self._clipboard_text = text  # ours now: do not echo it back
        try:
            await anyio.to_thread.run_sync(board.set, text)
        except Exception as exc:  # the clipboard is a courtesy: never end the session
            log.warning("clipboard not set: %s", str(exc) or type(exc).__name__)

    async def _send_clipboard(self, *, force: bool = False) -> None:
        board = self.devices.clipboard
        if board is None:
            return
        text = await self._read_clipboard()
        if text is None or (text == self._clipboard_text and not force):
            return
        self._clipboard_text = text
        data = text.encode("utf-8")
        if len(data) > MAX_CLIPBOARD_BYTES:
            await self._clipboard_refused(len(data), "this computer's clipboard")
            return
        await self.send("clipboard_data", pb.ClipboardData(
            format=pb.CLIPBOARD_TEXT, data=data, mime_type="text/plain;charset=utf-8"))

    async def _clipboard_refused(self, size: int, whose: str) -> None:
        """Too much text to share: said to the technicians in the chat, never sent."""
        said = (f"Clipboard not shared: {whose} holds {size / 1048576:.1f} MB of text, more "
                f"than the {MAX_CLIPBOARD_BYTES // 1048576} MB shared.")
        log.warning("%s", said)
        await self.send("chat_message", chat_message("remote agent", said))

    async def _read_clipboard(self) -> str | None:
        """The clipboard's text; ``None`` also when the program holding it does not answer."""
        board = self.devices.clipboard
        if board is None:
            return None
        text = None
        with anyio.move_on_after(2):  # an unanswered read finishes in its thread, unawaited
            try:
                text = await anyio.to_thread.run_sync(board.get, abandon_on_cancel=True)
            except Exception as exc:
                log.debug("clipboard not read: %s", str(exc) or type(exc).__name__)
        return text

    async def _clipboard_watch(self) -> None:
        """While someone watches, what the user copies goes to the technician."""
        if self.devices.clipboard is None:
            return
        self._clipboard_text = await self._read_clipboard()
        while True:
            await anyio.sleep(self.timing.clipboard)
            if self.state.active:
                await self._send_clipboard()

    async def _send_chat(self, message: Any) -> None:
        await self.send("chat_message", message)

    # -- periodic work ---------------------------------------------------------------------
    async def _heartbeats(self) -> None:
        while True:
            await self.send("heartbeat", pb.Heartbeat(timestamp=int(time.time() * 1000)))
            await anyio.sleep(self.timing.heartbeat)
            if time.monotonic() - self._last_heard > self.timing.silence:
                log.warning("the server has been silent for %.0f s; reconnecting",
                            self.timing.silence)
                assert self._ws is not None
                await self._ws.close(1001, "server silent")
                return

    async def _report_status(self) -> None:
        await self.send("agent_status", agent_status(self.config, self.displays,
                                                     self.state.active, self.plugins))

    async def _status_reports(self) -> None:
        while True:
            await anyio.sleep(self.timing.status)
            if not self.state.active:
                await self._report_status()

    async def _display_watch(self) -> None:
        while True:
            await anyio.sleep(self.timing.displays)
            found = await anyio.to_thread.run_sync(self.devices.capture.displays)
            if found != self.displays:
                self.displays = found
                await self.send("display_info", display_info(found))
                if self.state.active:
                    self.state.generation += 1  # rebuild for the new geometry
                    self.state.keyframe_wanted = True
                    self.streamer.poke()

    async def _cursor_watch(self) -> None:
        sink = self.devices.input
        if sink is None:
            return
        watch = self._pointer = PointerWatch(sink.cursor, moving=self.timing.cursor,
                                             still=self.timing.cursor_still,
                                             moved_at=lambda: self._pointer_moved_at)
        try:
            while True:
                display = self.streamer.streaming_display
                if not self.state.active or display is None:
                    await anyio.sleep(self.timing.cursor_still)
                    continue
                position, shape = await watch.changed(
                    lambda: self.state.active and self.streamer.streaming_display is not None,
                    lambda: self._cursor_due)
                if shape is not None:
                    self._cursor_shape, self._cursor_due = shape, True
                if position is not None:
                    self._cursor_position = position
                    self._pointer_moved_at = time.monotonic()
                display = self.streamer.streaming_display
                if display is None:  # the stream stopped meanwhile: kept for the next
                    continue
                if position is None and self._cursor_due:
                    position = self._cursor_position
                if self._cursor_due and self._cursor_shape is not None:
                    self._cursor_due = False
                    await self.send("cursor_shape", self._cursor_shape)
                if position is not None:
                    x, y = position[0] - display.x, position[1] - display.y
                    visible = 0 <= x < display.width and 0 <= y < display.height
                    await self.send("cursor_position",
                                    pb.CursorPosition(x=x, y=y, visible=visible))
        finally:
            self._pointer = None
            watch.close()


HANDLERS: dict[str, Callable[[AgentSession, Any], Awaitable[bool | None]]] = {
    "video_ack": AgentSession._on_video_ack,
    "mouse_event": AgentSession._on_mouse_event,
    "key_event": AgentSession._on_key_event,
    "special_key": AgentSession._on_special_key,
    "start_stream": AgentSession._on_start_stream,
    "stop_stream": AgentSession._on_stop_stream,
    "switch_display": AgentSession._on_switch_display,
    "quality_settings": AgentSession._on_quality_settings,
    "consent_request": AgentSession._on_consent_request,
    "participants": AgentSession._on_participants,
    "chat_message": AgentSession._on_chat_message,
    "clipboard_data": AgentSession._on_clipboard_data,
    "clipboard_request": AgentSession._on_clipboard_request,
    "admin_command": AgentSession._admin,
    "update_info": AgentSession._on_update_info,
    "backstage_open": AgentSession._on_backstage_open,
    "backstage_data": AgentSession._on_backstage_data,
    "backstage_resize": AgentSession._on_backstage_resize,
    "backstage_ack": AgentSession._on_backstage_ack,
    "backstage_close": AgentSession._on_backstage_close,
    "file_open": AgentSession._on_file_open,
    "file_request": AgentSession._on_file_request,
    "file_data": AgentSession._on_file_data,
    "file_ack": AgentSession._on_file_ack,
    "file_close": AgentSession._on_file_close,
}
"""What the agent does with each kind the server sends it; ``True`` ends the session. The
handshake answer and ``disconnect`` are read before it (``_handshake``, ``_read``)."""

NOT_ACTED_ON = {
    "latency_report": "the agent keeps no latency figures of its own",
    "heartbeat_ack": "its arrival is what counts: any message resets the silence watch",
}
"""Kinds the server may send the agent that it reads and lets go, each with why."""

"""Who is connected to this machine now, as the server last said (``Participants``).

The person at an attended machine should always know who is watching: the
server tells the agent on every join, leave or loss of control, and the agent
logs it, shows it in an indicator where there is a display, and names those
already connected when it asks about another technician.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from remote_core.protocol import pb
from remote_core.textrules import escaped

__all__ = ["Connected", "Presence", "describe"]

log = logging.getLogger(__name__)

MAX_NAME = 64


@dataclass(frozen=True)
class Connected:
    """One technician connected now; ``control`` when they may control, not only view;
    ``backstage`` when they have a terminal (a shell) open on this machine,
    ``file_transfer`` when they have its files open (browse, download, upload)."""

    name: str
    control: bool
    backstage: bool = False
    file_transfer: bool = False

    def __str__(self) -> str:
        terminal = ", terminal" if self.backstage else ""
        files = ", files" if self.file_transfer else ""
        return (f"{self.name} ({'view and control' if self.control else 'view'}"
                f"{terminal}{files})")


def describe(connected: tuple[Connected, ...]) -> str:
    """``techa (view and control), techb (view)``, or ``nobody``."""
    return ", ".join(map(str, connected)) or "nobody"


Listener = Callable[[tuple[Connected, ...]], None]
"""Called on the event loop with everyone connected now; must not block."""

SessionListener = Callable[[bool], None]
"""Called on the event loop when a session goes live (``True``) or ends; must not block."""

RecordingListener = Callable[[bool], None]
"""Called on the event loop when a recording of the session starts (``True``) or stops."""

PanelListener = Callable[[], None]
"""Called on the event loop the first time the server says the session panel shows."""


class Presence:
    """The technicians connected now; listeners hear every change."""

    def __init__(self) -> None:
        self.connected: tuple[Connected, ...] = ()
        self.live = False
        self.panel_asked = False
        self.recording = False  # the server records the session now
        self._listeners: list[Listener] = []
        self._recording_listeners: list[RecordingListener] = []
        self._session_listeners: list[SessionListener] = []
        self._panel_listeners: list[PanelListener] = []

    def listen(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def listen_session(self, listener: SessionListener) -> None:
        """Hear when a session goes live and when it ends (the session panel shows then)."""
        self._session_listeners.append(listener)

    def listen_recording(self, listener: RecordingListener) -> None:
        """Hear when the server starts or stops recording the session."""
        self._recording_listeners.append(listener)

    def listen_panel(self, listener: PanelListener) -> None:
        """Hear when the server first says the end user sees the session panel."""
        self._panel_listeners.append(listener)

    def panel(self, shown: bool) -> None:
        """What ``StartStream.session_panel`` said: the server's policy for this machine.
        Once asked, the panel stays for the agent's run (never taken from the end user)."""
        if not shown or self.panel_asked:
            return
        self.panel_asked = True
        for listener in self._panel_listeners:
            try:
                listener()
            except Exception:
                log.exception("a panel listener failed")

    def opened(self) -> None:
        """A session is live (authenticated); nobody need be connected yet."""
        self._tell_session(True)

    def closed(self) -> None:
        """The session's connection ended."""
        self._tell_session(False)

    def _tell_session(self, live: bool) -> None:
        self.live = live
        for listener in self._session_listeners:
            try:
                listener(live)
            except Exception:
                log.exception("a session listener failed")

    def told(self, message: Any) -> None:
        """A ``Participants`` message arrived from the server."""
        self._recorded(bool(message.recording))
        self._set(tuple(Connected(escaped(p.name, MAX_NAME) or "technician",
                                  p.access_mode == pb.CONSENT_CONTROL, p.backstage,
                                  p.file_transfer)
                        for p in message.participants))

    def clear(self) -> None:
        """The connection ended: nobody is connected through it any more."""
        self._recorded(False)
        self._set(())

    def _recorded(self, recording: bool) -> None:
        if recording == self.recording:
            return
        self.recording = recording
        log.info("the server %s recording this session", "is" if recording else "stopped")
        for listener in self._recording_listeners:
            try:
                listener(recording)
            except Exception:
                log.exception("a recording listener failed")

    def _set(self, connected: tuple[Connected, ...]) -> None:
        if connected == self.connected:
            return
        self.connected = connected
        log.info("connected now: %s", describe(connected))
        for listener in self._listeners:
            try:
                listener(connected)
            except Exception:
                log.exception("a presence listener failed")

"""The session panel: the end user's window for the whole session, always on top.

It names everyone connected now and whether they view or control, opens the chat,
and has **End session**, which stops the picture and input at once and ends the
session for every viewer. Nothing the technician sends closes or hides it: its
close button only minimizes it. An attended session shows it from the moment the
session is live to its end; a managed one (when ``session_panel_managed`` is set)
while any technician is connected. Its words come from the ``remote_agent``
catalogue in the system locale's language.
"""

from __future__ import annotations

import gettext
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from remote_core.catalogue import mnemonic, translation

from .presence import Connected
from .tkthread import ACTIVE_TICK, HIDDEN_TICK, TkThread

__all__ = ["TITLE", "SessionPanel", "catalogue", "open_session_panel"]

log = logging.getLogger(__name__)

TITLE = "Remote support session"
"""The English title; the panel shows the translation of the current locale."""

DOMAIN = "remote_agent"
LOCALE = Path(__file__).resolve().parent / "locale"


def catalogue() -> gettext.NullTranslations:
    """The agent's catalogue for the current locale."""
    return translation(DOMAIN, LOCALE)


class SessionPanel:
    """The panel in a Tk thread of its own; every method may be called from any thread.

    :param end: called (in the panel's thread, must not block) when End session is pressed.
    :param chat: called to show the chat window; ``None`` leaves the Chat button out.
    :param always: shown for the whole session (attended), not only while someone is
        connected (managed).
    """

    def __init__(self, end: Callable[[], None], chat: Callable[[], None] | None = None, *,
                 always: bool = True) -> None:
        self._end = end
        self._chat = chat
        self._always = always
        self._live = False
        self._recording = False
        self._connected: tuple[Connected, ...] = ()
        self._logged: list[str] = []
        self._tk = TkThread("panel")
        self._widgets: dict[str, Any] = {}
        self._tk.call(self._build)

    def _build(self, root: Any) -> None:
        import tkinter

        _ = catalogue().gettext
        self._words = {"view": _("views"), "control": _("views and controls"),
                       "terminal": _("has a terminal open"),
                       "files": _("transfers files"),
                       "nobody": _("Nobody is connected right now."),
                       "recording": _("This session is being recorded.")}
        window = tkinter.Toplevel(root, padx=12, pady=10)
        window.title(_("Remote support session"))
        window.attributes("-topmost", True)
        window.resizable(False, False)
        window.withdraw()
        window.protocol("WM_DELETE_WINDOW", window.iconify)  # the end user's to minimize
        heading = tkinter.Label(window, text=_("Connected to this computer:"),
                                font=("TkDefaultFont", 10, "bold"))
        heading.pack(anchor="w")
        people = tkinter.Frame(window)
        people.pack(anchor="w", fill="x", pady=(4, 8))
        recording = tkinter.Label(window, text="", fg="#b3261e", font=("TkDefaultFont", 10, "bold"))
        recording.pack(anchor="w", pady=(0, 8))
        buttons = tkinter.Frame(window)
        buttons.pack(anchor="e")
        widgets: dict[str, Any] = {"window": window, "heading": heading, "people": people,
                                   "recording": recording}
        if self._chat is not None:
            chat_text, chat_at, chat_key = mnemonic(_("&Chat"))
            chat = tkinter.Button(buttons, text=chat_text, underline=chat_at, width=10,
                                  command=self._chat)
            chat.pack(side="left")
            widgets["chat"] = chat
            if chat_key:
                window.bind(f"<Alt-{chat_key}>", lambda _e: chat.invoke())
        end_text, end_at, end_key = mnemonic(_("&End session"))
        end = tkinter.Button(buttons, text=end_text, underline=end_at, width=14,
                             fg="#ffffff", bg="#b3261e", activeforeground="#ffffff",
                             activebackground="#8c1d18", command=self._pressed_end)
        end.pack(side="left", padx=(6, 0))
        widgets["end"] = end
        if end_key:
            window.bind(f"<Alt-{end_key}>", lambda _e: end.invoke())
        for button in (b for name, b in widgets.items() if name in {"chat", "end"}):
            button.bind("<Return>", lambda e: e.widget.invoke())
            button.bind("<KP_Enter>", lambda e: e.widget.invoke())
        self._widgets = widgets
        self._render()

    def _render(self) -> None:
        """Redraw the list and show or hide the window (in the Tk thread)."""
        import tkinter

        people = self._widgets["people"]
        for row in people.winfo_children():
            row.destroy()
        lines = [f"{who.name}: {self._words['control' if who.control else 'view']}"
                 + (f", {self._words['terminal']}" if who.backstage else "")
                 + (f", {self._words['files']}" if who.file_transfer else "")
                 for who in self._connected] or [self._words["nobody"]]
        for line in lines:
            tkinter.Label(people, text=line, anchor="w").pack(anchor="w")
        recording = self._words["recording"] if self._recording else ""
        self._widgets["recording"].configure(text=recording)
        if recording:
            lines = [*lines, recording]
        window = self._widgets["window"]
        shown = self._live and (self._always or self._connected)
        if shown and lines != self._logged:  # what the end user saw, for support's sake
            self._logged = lines
            log.info("session panel shows: %s", "; ".join(lines))
        if shown:
            window.update_idletasks()
            x = window.winfo_screenwidth() - window.winfo_reqwidth() - 8
            window.geometry(f"+{max(0, x)}+8")
            if window.state() == "withdrawn":
                window.deiconify()
            window.lift()
            self._tk.tick = ACTIVE_TICK
        else:
            window.withdraw()
            self._tk.tick = HIDDEN_TICK

    def _pressed_end(self) -> None:
        self._widgets["end"].configure(state="disabled")
        try:
            self._end()
        except Exception:
            log.exception("End session failed")

    def show(self, connected: tuple[Connected, ...]) -> None:
        """Everyone connected now (a presence listener; does not wait)."""
        def show(_root: Any) -> None:
            self._connected = connected
            self._render()

        self._tk.call(show, wait=False)

    def recording(self, recording: bool) -> None:
        """The server started or stopped recording the session (a presence recording
        listener; does not wait)."""
        def recording_now(_root: Any) -> None:
            self._recording = recording
            self._render()

        self._tk.call(recording_now, wait=False)

    def session(self, live: bool) -> None:
        """A session went live or ended (a presence session listener; does not wait)."""
        def session(_root: Any) -> None:
            self._live = live
            if live:
                self._widgets["end"].configure(state="normal")
            self._render()

        self._tk.call(session, wait=False)

    def texts(self) -> dict[str, str]:
        """What the panel shows now: title, heading, one ``person N`` per line, buttons,
        and ``recording`` while the session is being recorded."""
        def read(_root: Any) -> dict[str, str]:
            shown = {"title": str(self._widgets["window"].title()),
                     "heading": str(self._widgets["heading"].cget("text")),
                     "end": str(self._widgets["end"].cget("text")),
                     "state": str(self._widgets["window"].state())}
            if "chat" in self._widgets:
                shown["chat"] = str(self._widgets["chat"].cget("text"))
            if self._widgets["recording"].cget("text"):
                shown["recording"] = str(self._widgets["recording"].cget("text"))
            for n, row in enumerate(self._widgets["people"].winfo_children()):
                shown[f"person {n}"] = str(row.cget("text"))
            return shown

        result: dict[str, str] = self._tk.call(read)
        return result

    def close(self) -> None:
        self._tk.call(lambda _root: self._widgets.clear())
        self._tk.close()


def open_session_panel(end: Callable[[], None], chat: Callable[[], None] | None = None, *,
                       always: bool = True) -> SessionPanel | None:
    """The panel where there is a display to show it, else ``None`` (the log says it)."""
    if sys.platform not in {"win32", "darwin"} and not os.environ.get("DISPLAY"):
        return None
    try:
        return SessionPanel(end, chat, always=always)
    except Exception as exc:
        log.info("session panel unavailable: %s", exc)
        return None

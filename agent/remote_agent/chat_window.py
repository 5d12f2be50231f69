"""The end user's side of the chat: a small window with the conversation and a reply line.

Its words come from the agent's catalogue (``remote_agent``, as the session panel's) in
the system locale's language.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from typing import Any

from remote_core.catalogue import mnemonic

from .panel_window import catalogue
from .tkthread import ACTIVE_TICK, HIDDEN_TICK, TkThread

__all__ = ["TITLE", "ChatWindow", "open_chat_window"]

log = logging.getLogger(__name__)

TITLE = "Remote support chat"
"""The English title; the window shows the translation of the current locale."""


class ChatWindow:
    """Shown when the technician writes; Enter or Send passes the line to ``reply``.

    ``reply`` is called in the window's thread and may block briefly.
    """

    def __init__(self, reply: Callable[[str], object]) -> None:
        self._reply = reply
        self._tk = TkThread("chat")
        self._widgets: dict[str, Any] = {}
        self._tk.call(self._build)

    def _build(self, root: Any) -> None:
        import tkinter

        _ = catalogue().gettext
        self._you = _("You")
        window = tkinter.Toplevel(root)
        window.title(_("Remote support chat"))
        window.geometry("360x240")
        window.withdraw()
        window.protocol("WM_DELETE_WINDOW", self._hide)  # it comes back on a message
        log_view = tkinter.Text(window, height=10, width=44, state="disabled", wrap="word")
        log_view.pack(fill="both", expand=True, padx=6, pady=(6, 0))
        line = tkinter.Entry(window)
        line.pack(side="left", fill="x", expand=True, padx=6, pady=6)
        send_text, send_at, send_key = mnemonic(_("&Send"))
        send = tkinter.Button(window, text=send_text, underline=send_at, command=self._send)
        send.pack(side="right", padx=(0, 6), pady=6)
        line.bind("<Return>", lambda _e: self._send())
        if send_key:
            window.bind(f"<Alt-{send_key}>", lambda _e: send.invoke())
        self._widgets = {"window": window, "log": log_view, "line": line, "send": send}

    def _append(self, who: str, text: str) -> None:
        view = self._widgets["log"]
        view.configure(state="normal")
        view.insert("end", f"{who}: {text}\n")
        view.see("end")
        view.configure(state="disabled")

    def _send(self) -> None:
        line = self._widgets["line"]
        text = line.get().strip()
        if not text:
            return
        line.delete(0, "end")
        self._append(self._you, text)
        try:
            self._reply(text)
        except Exception:
            log.exception("the chat reply could not be sent")

    def show(self, sender: str, text: str) -> None:
        """Show a message from the technician (any thread; does not wait)."""
        def show(_root: Any) -> None:
            self._append(sender.capitalize(), text)
            window = self._widgets["window"]
            self._tk.tick = ACTIVE_TICK  # repaint and take typing promptly while shown
            window.deiconify()
            window.lift()
            self._widgets["line"].focus_set()

        self._tk.call(show, wait=False)

    def open(self) -> None:
        """Show the window without a new message: the session panel's Chat button."""
        def show(_root: Any) -> None:
            window = self._widgets["window"]
            self._tk.tick = ACTIVE_TICK
            window.deiconify()
            window.lift()
            self._widgets["line"].focus_set()

        self._tk.call(show, wait=False)

    def texts(self) -> dict[str, str]:
        """What the window shows now: ``title``, ``send`` and the conversation (``log``)."""
        def read(_root: Any) -> dict[str, str]:
            return {"title": str(self._widgets["window"].title()),
                    "send": str(self._widgets["send"].cget("text")),
                    "log": str(self._widgets["log"].get("1.0", "end-1c"))}

        result: dict[str, str] = self._tk.call(read)
        return result

    def _hide(self) -> None:
        self._widgets["window"].withdraw()
        self._tk.tick = HIDDEN_TICK

    def close(self) -> None:
        # the widgets hold the interpreter: drop them in its own thread
        self._tk.call(lambda _root: self._widgets.clear())
        self._tk.close()


def open_chat_window(reply: Callable[[str], object]) -> ChatWindow | None:
    """A chat window where there is a display to show one, else ``None``."""
    if sys.platform not in {"win32", "darwin"} and not os.environ.get("DISPLAY"):
        return None
    try:
        return ChatWindow(reply)
    except Exception as exc:
        log.info("chat window unavailable: %s", exc)
        return None

"""The consent question as a small Tk dialog: who, for which organization, what access,
whether it is recorded, Allow and Deny, and a visible countdown to the automatic denial.

Keyboard: Deny has the focus (a stray Enter must not grant access), Tab moves
between the buttons, Enter or Space presses the focused one, Escape denies, and
each button has an Alt mnemonic from its translated label (Alt+A / Alt+D in English).
"""

from __future__ import annotations

import time
from typing import Any

from remote_core.catalogue import mnemonic
from remote_core.interfaces import ConsentPrompt
from remote_core.types import ConsentAsk

from ._text import wording

__all__ = ["TITLE", "TkConsent"]

TITLE = "Remote support request"
"""The English title; the dialog shows the translation of the current locale."""


def _press(button: Any) -> str:
    """Press ``button`` for a key binding, and stop the event there: the answer destroys
    the dialog, and Tk's own Alt binding (menu traversal) must not run on it afterwards
    (it printed "application has been destroyed" to the end user's terminal)."""
    button.invoke()
    return "break"


class _Dialog:
    """One dialog on its own Tk root; :meth:`run` blocks until it has an answer."""

    def __init__(self, request: ConsentAsk) -> None:
        import tkinter

        words = wording(request)
        self.answer: tuple[bool, str] = (False, "dialog closed")
        self.deadline = time.monotonic() + request.timeout_secs
        self.root: Any = tkinter.Tk(className="RemoteSupportConsent")
        self.root.title(words.title)
        self.root.attributes("-topmost", True)
        self.root.protocol("WM_DELETE_WINDOW", lambda: self._finish(False, "dialog closed"))
        frame = tkinter.Frame(self.root, padx=16, pady=12)
        frame.pack(fill="both", expand=True)
        self.labels: dict[str, Any] = {}
        self.labels["asks"] = tkinter.Label(frame, text=words.asks, justify="left",
                                            wraplength=380, font=("TkDefaultFont", 11, "bold"))
        self.labels["asks"].pack(anchor="w", pady=(0, 8))
        details = tkinter.Frame(frame)
        details.pack(anchor="w", fill="x")
        for row, (name, label, value) in enumerate((
                ("technician", words.technician_label, words.technician),
                ("organization", words.organization_label, words.organization),
                ("access", words.access_label, words.access),
                ("recording", words.recording_label, words.recording))):
            tkinter.Label(details, text=label).grid(row=row, column=0, sticky="w", padx=(0, 8))
            self.labels[name] = tkinter.Label(details, text=value, justify="left",
                                              wraplength=280)
            self.labels[name].grid(row=row, column=1, sticky="w")
        if words.connected:
            self.labels["connected"] = tkinter.Label(frame, text=words.connected,
                                                     justify="left", wraplength=380)
            self.labels["connected"].pack(anchor="w", pady=(6, 0))
        self._countdown_text = words.countdown
        self.countdown = tkinter.Label(frame, fg="#404040", font=("TkDefaultFont", 11, "bold"))
        self.countdown.pack(anchor="w", pady=(8, 10))
        self.labels["countdown"] = self.countdown
        buttons = tkinter.Frame(frame)
        buttons.pack(anchor="e")
        allow_text, allow_at, allow_key = mnemonic(words.allow)
        deny_text, deny_at, deny_key = mnemonic(words.deny)
        # created in visual order, Allow then Deny: Tab follows the order on screen
        self.allow = tkinter.Button(buttons, text=allow_text, underline=allow_at, width=10,
                                    command=lambda: self._finish(True, ""))
        self.deny = tkinter.Button(buttons, text=deny_text, underline=deny_at, width=10,
                                   command=lambda: self._finish(False, "denied by the user"))
        self.allow.pack(side="left")
        self.deny.pack(side="left", padx=(6, 0))
        for button in (self.allow, self.deny):
            button.bind("<Return>", lambda e: _press(e.widget))
            button.bind("<KP_Enter>", lambda e: _press(e.widget))
        if allow_key:
            self.root.bind(f"<Alt-{allow_key}>", lambda _e: _press(self.allow))
        if deny_key:
            self.root.bind(f"<Alt-{deny_key}>", lambda _e: _press(self.deny))
        self.root.bind("<Escape>", lambda _e: _press(self.deny))
        self.deny.focus_set()  # Enter or Space on a stray keystroke must not grant access
        self._done = False
        self._ticking: str | None = None
        self._tick()

    def _tick(self) -> None:
        left = self.deadline - time.monotonic()
        if left <= 0:
            self._finish(False, "timeout")
            return
        self.countdown.configure(text=self._countdown_text.format(secs=int(left + 0.999)))
        self._ticking = self.root.after(200, self._tick)

    def texts(self) -> dict[str, str]:
        """What the dialog shows now, by part (``asks``, ``technician``, ``countdown`` ...)."""
        shown = {name: str(label.cget("text")) for name, label in self.labels.items()}
        shown["title"] = str(self.root.title())
        shown["allow"] = str(self.allow.cget("text"))
        shown["deny"] = str(self.deny.cget("text"))
        return shown

    def _finish(self, granted: bool, reason: str) -> None:
        if self._done:
            return
        self._done = True
        self.answer = (granted, reason)
        if self._ticking is not None:
            # a countdown left scheduled outlives the window: the rest of this update, or
            # the next Tk run in this thread, fires it, and Tcl prints "invalid command
            # name ..._tick" to the end user's terminal
            self.root.after_cancel(self._ticking)
        self.root.destroy()

    def run(self) -> tuple[bool, str]:
        import tkinter

        while not self._done:
            try:
                self.root.update()
            except tkinter.TclError:  # the window went away under us: a close
                break
            time.sleep(0.02)
        return self.answer


class TkConsent(ConsentPrompt):
    """A desktop dialog. Call :meth:`ask` from one thread at a time (Tk is single-threaded)."""

    def ask(self, request: ConsentAsk) -> tuple[bool, str]:
        return _Dialog(request).run()

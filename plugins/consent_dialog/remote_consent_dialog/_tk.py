"""The consent question as a small Tk dialog: who, what access, Allow and Deny, a countdown."""

from __future__ import annotations

import time
from typing import Any

from remote_core.interfaces import ConsentPrompt
from remote_core.types import ConsentAsk

from ._text import question

__all__ = ["TITLE", "TkConsent"]

TITLE = "Remote support request"


class _Dialog:
    """One dialog on its own Tk root; :meth:`run` blocks until it has an answer."""

    def __init__(self, request: ConsentAsk) -> None:
        import tkinter

        self.answer: tuple[bool, str] = (False, "dialog closed")
        self.deadline = time.monotonic() + request.timeout_secs
        self.root: Any = tkinter.Tk(className="RemoteSupportConsent")
        self.root.title(TITLE)
        self.root.attributes("-topmost", True)
        self.root.protocol("WM_DELETE_WINDOW", lambda: self._finish(False, "dialog closed"))
        frame = tkinter.Frame(self.root, padx=16, pady=12)
        frame.pack(fill="both", expand=True)
        tkinter.Label(frame, text=question(request), justify="left",
                      wraplength=360).pack(anchor="w")
        self.countdown = tkinter.Label(frame, fg="#555")
        self.countdown.pack(anchor="w", pady=(6, 10))
        buttons = tkinter.Frame(frame)
        buttons.pack(anchor="e")
        self.deny = tkinter.Button(buttons, text="Deny", underline=0, width=10,
                                   command=lambda: self._finish(False, "denied by the user"))
        self.allow = tkinter.Button(buttons, text="Allow", underline=0, width=10,
                                    command=lambda: self._finish(True, ""))
        self.deny.pack(side="right", padx=(6, 0))
        self.allow.pack(side="right")
        self.root.bind("<Alt-a>", lambda _e: self.allow.invoke())
        self.root.bind("<Alt-d>", lambda _e: self.deny.invoke())
        self.root.bind("<Escape>", lambda _e: self.deny.invoke())
        self.deny.focus_set()  # Enter or Space on a stray keystroke must not grant access
        self._done = False
        self._tick()

    def _tick(self) -> None:
        left = self.deadline - time.monotonic()
        if left <= 0:
            self._finish(False, "timeout")
            return
        self.countdown.configure(text=f"Denied automatically in {int(left + 0.999)} s")
        self.root.after(200, self._tick)

    def _finish(self, granted: bool, reason: str) -> None:
        if self._done:
            return
        self._done = True
        self.answer = (granted, reason)
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

"""A small always-on-top note in the screen's top-right corner: who is connected now.

Shown while any technician is connected to this attended machine and hidden
when nobody is; closing it hides it until the next change. It is a modest
indicator, not a session panel: one line naming each technician and whether
they may control.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from .presence import Connected, describe
from .tkthread import TkThread

__all__ = ["TITLE", "PresenceWindow", "open_presence_window"]

log = logging.getLogger(__name__)

TITLE = "Remote support: connected"


def note(connected: tuple[Connected, ...]) -> str:
    return f"Connected to this computer: {describe(connected)}"


class PresenceWindow:
    def __init__(self) -> None:
        self._tk = TkThread("presence")
        self._widgets: dict[str, Any] = {}
        self._tk.call(self._build)

    def _build(self, root: Any) -> None:
        import tkinter

        window = tkinter.Toplevel(root)
        window.title(TITLE)
        window.attributes("-topmost", True)
        window.resizable(False, False)
        window.withdraw()
        window.protocol("WM_DELETE_WINDOW", window.withdraw)  # back on the next change
        label = tkinter.Label(window, padx=10, pady=4, fg="#ffffff", bg="#b3261e",
                              font=("TkDefaultFont", 10, "bold"))
        label.pack()
        self._widgets = {"window": window, "label": label}

    def show(self, connected: tuple[Connected, ...]) -> None:
        """Show who is connected, or hide when nobody is (any thread; does not wait)."""
        def show(_root: Any) -> None:
            window, label = self._widgets["window"], self._widgets["label"]
            if not connected:
                window.withdraw()
                return
            label.configure(text=note(connected))
            window.update_idletasks()
            x = window.winfo_screenwidth() - label.winfo_reqwidth() - 8
            window.geometry(f"+{max(0, x)}+8")
            window.deiconify()
            window.lift()

        self._tk.call(show, wait=False)

    def close(self) -> None:
        self._tk.call(lambda _root: self._widgets.clear())
        self._tk.close()


def open_presence_window() -> PresenceWindow | None:
    """The indicator where there is a display to show it, else ``None`` (the log says it)."""
    if sys.platform not in {"win32", "darwin"} and not os.environ.get("DISPLAY"):
        return None
    try:
        return PresenceWindow()
    except Exception as exc:
        log.info("presence indicator unavailable: %s", exc)
        return None

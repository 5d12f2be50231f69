"""Text clipboard of the desktop, through Tk in a thread of its own.

On X11 the clipboard is a conversation: whoever copied must answer every
paste, so the agent keeps a hidden Tk window alive in one thread that owns
the text the technician sent and reads what the user copied. Every Tk call
happens in that thread; other threads hand it work through a queue.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from typing import Any

from .tkthread import IDLE_TICK, TkThread

__all__ = ["TkClipboard", "open_clipboard"]

log = logging.getLogger(__name__)


class TkClipboard:
    """``get()`` and ``set(text)`` from any thread; ``close()`` ends the Tk thread."""

    def __init__(self) -> None:
        self._tk = TkThread("clipboard")
        self._reading = threading.Lock()

    def get(self) -> str | None:
        """The clipboard's text, or ``None`` when it holds none.

        A program that owns the clipboard but does not answer keeps Tk waiting
        for seconds; meanwhile further reads return ``None`` instead of queueing.
        """
        if not self._reading.acquire(blocking=False):
            return None
        try:
            return self._get()
        finally:
            self._reading.release()

    def _get(self) -> str | None:
        def read(root: Any) -> str | None:
            import tkinter

            try:
                return str(root.clipboard_get())
            except tkinter.TclError:
                return None

        result: str | None = self._tk.call(read, timeout=None)  # Tk gives up on its own
        return result

    def set(self, text: str) -> None:
        def write(root: Any) -> None:
            root.clipboard_clear()
            root.clipboard_append(text)
            root.update()
            self._tk.tick = IDLE_TICK  # the owner now: answer a paste promptly

        self._tk.call(write)

    def close(self) -> None:
        self._tk.close()


def open_clipboard() -> TkClipboard | None:
    """The desktop clipboard, or ``None`` where there is no display to hold one."""
    if sys.platform not in {"win32", "darwin"} and not os.environ.get("DISPLAY"):
        return None
    try:
        return TkClipboard()
    except Exception as exc:
        log.info("clipboard sharing disabled: %s", exc)
        return None

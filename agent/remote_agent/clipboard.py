"""Text clipboard of the desktop, through Tk in a thread of its own.

On X11 the clipboard is a conversation: whoever copied must answer every
paste, so the agent keeps a hidden Tk window alive in one thread that owns
the text the technician sent and reads what the user copied. Every Tk call
happens in that thread; other threads hand it work through a queue.
"""

from __future__ import annotations

import logging
import os
import queue
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

__all__ = ["TkClipboard", "open_clipboard"]

log = logging.getLogger(__name__)

_TICK = 0.05


class TkClipboard:
    """``get()`` and ``set(text)`` from any thread; ``close()`` ends the Tk thread."""

    def __init__(self) -> None:
        self._jobs: queue.Queue[tuple[Callable[[Any], Any], Future[Any]] | None] = queue.Queue()
        ready: Future[None] = Future()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="clipboard",
                                        daemon=True)
        self._thread.start()
        ready.result(timeout=10)

    def _run(self, ready: Future[None]) -> None:
        try:
            import tkinter

            root = tkinter.Tk()
            root.withdraw()
        except Exception as exc:
            ready.set_exception(exc)
            return
        ready.set_result(None)
        while True:
            try:
                job = self._jobs.get(timeout=_TICK)
            except queue.Empty:
                job = ()  # type: ignore[assignment]
            if job is None:
                break
            if job:
                call, result = job
                try:
                    result.set_result(call(root))
                except Exception as exc:
                    result.set_exception(exc)
            root.update()  # answer other programs' paste requests
        root.destroy()

    def _call(self, call: Callable[[Any], Any]) -> Any:
        result: Future[Any] = Future()
        self._jobs.put((call, result))
        return result.result(timeout=10)

    def get(self) -> str | None:
        """The clipboard's text, or ``None`` when it holds none."""
        def read(root: Any) -> str | None:
            import tkinter

            try:
                return str(root.clipboard_get())
            except tkinter.TclError:
                return None

        result: str | None = self._call(read)
        return result

    def set(self, text: str) -> None:
        def write(root: Any) -> None:
            root.clipboard_clear()
            root.clipboard_append(text)
            root.update()

        self._call(write)

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join(timeout=5)


def open_clipboard() -> TkClipboard | None:
    """The desktop clipboard, or ``None`` where there is no display to hold one."""
    if sys.platform not in {"win32", "darwin"} and not os.environ.get("DISPLAY"):
        return None
    try:
        return TkClipboard()
    except Exception as exc:
        log.info("clipboard sharing disabled: %s", exc)
        return None

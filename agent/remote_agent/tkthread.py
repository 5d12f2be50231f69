"""One Tk interpreter in a thread of its own, for the agent's small desktop windows.

Tk must be driven from the thread that created it, and X11 needs its event
loop running for a window to repaint or for a clipboard owner to answer a
paste; so the thread sleeps in Tk's main loop and other threads hand it work
through a queue, waking it by writing a byte to a pipe the loop watches. No
other thread ever holds the interpreter (Tcl aborts if one deletes it), and
an idle loop costs nothing.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

__all__ = ["TkThread"]

_POLL_MS = 50
"""Where pipes cannot wake Tk (Windows), how often the loop looks for work."""


class TkThread:
    """A running, withdrawn Tk root; ``call(fn)`` runs ``fn(root)`` in its thread."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.Queue[Callable[[Any], None] | None] = queue.Queue()
        self._wake_r, self._wake_w = os.pipe()
        ready: Future[None] = Future()
        self._thread = threading.Thread(target=self._run, args=(ready,), name=name,
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

        def drain(*_: object) -> None:
            if pipe_wakes:
                os.read(self._wake_r, 4096)
            while True:
                try:
                    job = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if job is None:
                    root.quit()
                    return
                job(root)
            if not pipe_wakes:
                root.after(_POLL_MS, drain)

        pipe_wakes = sys.platform != "win32"
        if pipe_wakes:
            root.createfilehandler(self._wake_r, tkinter.READABLE, drain)
        else:
            root.after(_POLL_MS, drain)
        ready.set_result(None)
        root.mainloop()
        root.destroy()

    def _submit(self, job: Callable[[Any], None] | None) -> None:
        self._jobs.put(job)
        if sys.platform != "win32":
            os.write(self._wake_w, b"x")

    def call(self, fn: Callable[[Any], Any], *, wait: bool = True) -> Any:
        """Run ``fn(root)`` in the Tk thread; with ``wait``, return its result."""
        result: Future[Any] = Future()

        def job(root: Any) -> None:
            try:
                result.set_result(fn(root))
            except Exception as exc:
                result.set_exception(exc)

        self._submit(job)
        return result.result(timeout=10) if wait else None

    def close(self) -> None:
        if self._thread.is_alive():
            self._submit(None)
            self._thread.join(timeout=5)
        for fd in (self._wake_r, self._wake_w):
            os.close(fd)

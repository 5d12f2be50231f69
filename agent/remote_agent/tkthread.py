"""One Tk interpreter in a thread of its own, for the agent's small desktop windows.

Tk must be driven from the thread that created it, and X11 needs its event
loop served for a window to repaint or for a clipboard owner to answer a
paste. The thread waits on a queue for work from other threads and serves
Tk's events between jobs: every 30 ms while a window is shown, every 250 ms
while it owns the clipboard (a paste from another program then waits at most
that long), every second otherwise, so an idle agent spends almost nothing here
(at 250 ms, the chat's and the clipboard's threads were a sixth of an idle
agent's CPU under a viewer). Everything Tk stays in this thread:
Tcl aborts the process if another thread deletes an interpreter.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

__all__ = ["ACTIVE_TICK", "HIDDEN_TICK", "IDLE_TICK", "TkThread"]

ACTIVE_TICK = 0.03
"""Seconds between the services of Tk's events while a window shows."""
IDLE_TICK = 0.25
"""... while the thread owns the clipboard, nothing shown."""
HIDDEN_TICK = 1.0
"""... with nothing shown and nothing owned."""


class TkThread:
    """A running, withdrawn Tk root; ``call(fn)`` runs ``fn(root)`` in its thread."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.Queue[Callable[[Any], None] | None] = queue.Queue()
        self.tick = HIDDEN_TICK
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
        ready.set_result(None)
        while True:
            try:
                job = self._jobs.get(timeout=self.tick)
            except queue.Empty:
                job = _serve_events
            if job is None:
                break
            job(root)
            root.update()
        root.destroy()
        del root

    def call(self, fn: Callable[[Any], Any], *, wait: bool = True,
             timeout: float | None = 10.0) -> Any:
        """Run ``fn(root)`` in the Tk thread; with ``wait``, return its result."""
        result: Future[Any] = Future()

        def job(root: Any) -> None:
            try:
                result.set_result(fn(root))
            except Exception as exc:
                result.set_exception(exc)

        self._jobs.put(job)
        return result.result(timeout=timeout) if wait else None

    def close(self) -> None:
        if self._thread.is_alive():
            self._jobs.put(None)
            self._thread.join(timeout=5)


def _serve_events(_root: Any) -> None:
    """Nothing to do but let Tk answer X (the loop calls ``update()`` after each job)."""

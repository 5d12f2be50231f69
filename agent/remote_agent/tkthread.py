"""One Tk interpreter in a thread of its own, for the agent's small desktop windows.

Tk must be driven from the thread that created it, and X11 needs its event
loop running for a window to repaint or for a clipboard owner to answer a
paste; so the thread runs ``update()`` every few milliseconds and any other
thread hands it work through :meth:`TkThread.call`.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

__all__ = ["TkThread"]

_TICK = 0.03


class TkThread:
    """A running Tk root (withdrawn); ``call(fn)`` runs ``fn(root)`` in its thread."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.Queue[tuple[Callable[[Any], Any], Future[Any]] | None] = queue.Queue()
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
                job = self._jobs.get(timeout=_TICK)
            except queue.Empty:
                job = None, None  # type: ignore[assignment]
            if job is None:
                break
            call, result = job
            if call is not None and result is not None:
                try:
                    result.set_result(call(root))
                except Exception as exc:
                    result.set_exception(exc)
            root.update()
        root.destroy()

    def call(self, fn: Callable[[Any], Any], *, wait: bool = True) -> Any:
        """Run ``fn(root)`` in the Tk thread; with ``wait``, return its result."""
        result: Future[Any] = Future()
        self._jobs.put((fn, result))
        return result.result(timeout=10) if wait else None

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join(timeout=5)

"""Keeping SVT-AV1's threads on the normal scheduler.

Run as root (as a managed agent's service is), SVT-AV1 makes the thread that opens an
encoder, and every thread it starts, real-time: ``SCHED_FIFO`` at priority 99. A
real-time thread that stays busy is never preempted by normal ones, so an encoder at work
could starve the end user's desktop and the agent's own socket; in this project's suite
it starved the test runner and the browser it drove until CI's time ran out. What such a
block turned real-time goes back to the normal scheduler (lowering needs no privilege).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

__all__ = ["normal_scheduling"]

_TASKS = "/proc/self/task"
_REAL_TIME = frozenset({getattr(os, "SCHED_FIFO", -1), getattr(os, "SCHED_RR", -1)})


def _policies() -> dict[int, int]:
    found = {}
    for name in os.listdir(_TASKS):
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            found[int(name)] = os.sched_getscheduler(int(name))
    return found


@contextlib.contextmanager
def normal_scheduling() -> Iterator[None]:
    """Undo what the block makes real-time, in this process's threads (Linux; elsewhere
    nothing to do)."""
    if not (hasattr(os, "sched_setscheduler") and os.path.isdir(_TASKS)):
        yield
        return
    before = _policies()
    try:
        yield
    finally:
        for tid, policy in _policies().items():
            if policy in _REAL_TIME and before.get(tid) not in _REAL_TIME:
                with contextlib.suppress(OSError):
                    os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))

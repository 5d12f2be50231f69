"""Ending the child processes tests and benchmarks start."""

from __future__ import annotations

import subprocess
from typing import Any

__all__ = ["stop"]


def stop(process: subprocess.Popen[Any], grace: float = 10.0) -> None:
    """Ask ``process`` to end (SIGTERM), and kill it if it has not within ``grace``
    seconds: a server that hangs on its way out (x11vnc over a shaped link does, now and
    then) must not end a run that has everything else measured."""
    process.terminate()
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()

"""Ending the child processes tests and benchmarks start."""

from __future__ import annotations

import subprocess
from typing import Any

__all__ = ["stop_process"]


def stop_process(process: subprocess.Popen[Any], grace: float = 10.0) -> None:
    """Ask a child to stop (SIGTERM, so it shuts down cleanly); kill it if it has not
    within ``grace`` seconds (x11vnc over a shaped link hangs on its way out now and then,
    and a benchmark must not lose a run to it)."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

"""Built-in plugin ``capture_mss``: screen capture with mss, driven by X DAMAGE where available.

On X11 the source subscribes to DAMAGE on the root window, so it wakes exactly
when something is drawn, grabs only what was drawn and reports the rows of it
that changed; elsewhere it polls and the encoder finds the changes itself.
"""

from __future__ import annotations

from typing import Any

from remote_core import hookimpl
from remote_core.types import CaptureSpec

from ._capture import MssCapture
from ._regions import merge_rects

__all__ = ["MssCapture", "merge_rects", "register_capture_sources"]


def _make(**options: Any) -> MssCapture:
    return MssCapture(**options)


def _available() -> bool:
    try:
        import mss

        with mss.MSS():
            return True
    except Exception:
        return False


@hookimpl
def register_capture_sources() -> list[CaptureSpec]:
    return [CaptureSpec(name="mss", factory=_make, available=_available)]

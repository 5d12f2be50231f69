"""The words both prompts use, so the dialog and the console say the same thing."""

from __future__ import annotations

from remote_core.types import ConsentAsk

__all__ = ["question"]


def question(request: ConsentAsk) -> str:
    what = "view and control" if request.control else "view"
    who = request.technician_name or "A technician"
    already = (f"Connected now: {', '.join(request.connected)}.\n"
               if request.connected else "")
    return (f"{who} asks to {what} this computer's screen.\n{already}"
            f"Allow? The request is denied in {request.timeout_secs} seconds "
            f"without an answer.")

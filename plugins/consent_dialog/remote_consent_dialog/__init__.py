"""Built-in plugin ``consent_dialog``: asks the person at the machine before a session goes live.

Two prompts: a Tk dialog where there is a display, and a console question
where there is a terminal. Silence is never consent: a timeout, a closed
dialog or end of input all deny.
"""

from __future__ import annotations

import os
import sys

from remote_core import hookimpl
from remote_core.types import ConsentPromptSpec

from ._console import ConsoleConsent
from ._tk import TkConsent

__all__ = ["ConsoleConsent", "TkConsent", "register_consent_prompts"]


def _tk_available() -> bool:
    if sys.platform not in {"win32", "darwin"} and not os.environ.get("DISPLAY"):
        return False
    try:
        import tkinter  # noqa: F401
    except ImportError:
        return False
    return True


def _console_available() -> bool:
    return sys.stdin is not None and sys.stdin.isatty()


@hookimpl
def register_consent_prompts() -> list[ConsentPromptSpec]:
    return [
        ConsentPromptSpec(name="tk_dialog", factory=TkConsent, priority=20,
                          available=_tk_available),
        ConsentPromptSpec(name="console", factory=ConsoleConsent, priority=10,
                          available=_console_available),
    ]

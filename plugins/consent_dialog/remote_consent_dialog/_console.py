"""The consent question on a terminal (or any pair of text streams)."""

from __future__ import annotations

import select
import sys
import time
from typing import TextIO

from remote_core.interfaces import ConsentPrompt
from remote_core.types import ConsentAsk

from ._text import question

__all__ = ["ConsoleConsent"]

_YES = {"y", "yes", "a", "allow"}


class ConsoleConsent(ConsentPrompt):
    """Asks on ``output`` and reads one line from ``input``: yes allows, anything else denies.

    The wait uses ``select`` on the input, so a timeout needs no extra thread.
    """

    def __init__(self, input: TextIO | None = None, output: TextIO | None = None) -> None:
        self._input = input if input is not None else sys.stdin
        self._output = output if output is not None else sys.stderr

    def ask(self, request: ConsentAsk) -> tuple[bool, str]:
        self._output.write(question(request) + " [y/N] ")
        self._output.flush()
        deadline = time.monotonic() + request.timeout_secs
        remaining = float(request.timeout_secs)
        while remaining > 0:
            ready, _, _ = select.select([self._input], [], [], remaining)
            if ready:
                line = self._input.readline()
                if not line:
                    return False, "no answer: input closed"
                if line.strip().lower() in _YES:
                    return True, ""
                return False, "denied by the user"
            remaining = deadline - time.monotonic()
        self._output.write("\n")
        return False, "timeout"

"""Built-in plugin ``input_pynput``: mouse and keyboard injection with pynput.

pynput connects to the display when imported, so it is imported by the
factory, never at plugin load.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from remote_core import hookimpl
from remote_core.interfaces import InputSink
from remote_core.types import InputSpec

__all__ = ["register_input_sinks"]


def _make(**options: Any) -> InputSink:
    from ._sink import PynputInput

    return PynputInput(**options)


def _available() -> bool:
    return sys.platform in {"win32", "darwin"} or bool(os.environ.get("DISPLAY"))


@hookimpl
def register_input_sinks() -> list[InputSpec]:
    return [InputSpec(name="pynput", factory=_make, available=_available)]

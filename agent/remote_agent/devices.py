"""What the agent drives on this machine, built once from the plugins."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from remote_core.interfaces import CaptureSource, ConsentPrompt, InputSink
from remote_core.plugins import Plugins
from remote_core.types import CodecSpec, DisplayDesc

from .clipboard import TkClipboard, open_clipboard

__all__ = ["Devices", "open_devices"]

log = logging.getLogger(__name__)


@dataclass
class Devices:
    """The capture source, the input sink (``None`` where injection is impossible), the
    codecs, the consent prompt (``None`` where nobody can be asked) and the text
    clipboard (``None`` where there is none)."""

    capture: CaptureSource
    input: InputSink | None
    codecs: list[CodecSpec]
    prompt: ConsentPrompt | None
    clipboard: TkClipboard | None = None

    def display(self, display_id: int, displays: list[DisplayDesc]) -> DisplayDesc | None:
        """The display ``display_id`` names (0 = primary), or ``None``."""
        for display in displays:
            if display.id == display_id or (display_id == 0 and display.is_primary):
                return display
        return None

    def close(self) -> None:
        for thing in (self.clipboard, self.input, self.capture):
            if thing is not None:
                try:
                    thing.close()
                except Exception:
                    log.debug("closing %s failed", type(thing).__name__, exc_info=True)


def _first_available(specs: list[Any], what: str) -> Any | None:
    for spec in specs:
        if spec.factory is not None and spec.available():
            return spec
    log.warning("no %s is available on this machine", what)
    return None


def open_devices(plugins: Plugins) -> Devices:
    """Build the devices from the loaded plugins; capture is required, the rest optional."""
    capture_spec = _first_available(plugins.capture_sources(), "screen capture")
    if capture_spec is None:
        raise RuntimeError("no screen-capture plugin works here (is there a display?)")
    input_spec = _first_available(plugins.input_sinks(), "input injection")
    prompts = sorted(plugins.consent_prompts(), key=lambda p: -p.priority)
    prompt_spec = _first_available(prompts, "consent prompt")
    sink = None
    if input_spec is not None:
        try:
            sink = input_spec.factory()
        except Exception as exc:
            log.warning("input injection disabled: %s", exc)
    return Devices(capture=capture_spec.factory(), input=sink, codecs=plugins.codecs(),
                   prompt=prompt_spec.factory() if prompt_spec is not None else None,
                   clipboard=open_clipboard())

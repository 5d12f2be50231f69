"""What the agent drives on this machine, built once from the plugins."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from remote_core.errors import PluginError
from remote_core.interfaces import CaptureSource, ConsentPrompt, InputSink
from remote_core.plugins import Plugins
from remote_core.types import CaptureSpec, CodecSpec, ConsentPromptSpec, DisplayDesc, InputSpec

from .clipboard import TkClipboard, open_clipboard

__all__ = ["Devices", "choose_backend", "open_devices"]

log = logging.getLogger(__name__)

S = TypeVar("S", CaptureSpec, InputSpec, ConsentPromptSpec)


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


def _first_available(specs: Sequence[S], what: str) -> S | None:
    for spec in specs:
        if spec.factory is not None and spec.available():
            return spec
    log.warning("no %s is available on this machine", what)
    return None


def choose_backend(plugins: Plugins, specs: Sequence[S], configured: str | None,
                   what: str) -> S | None:
    """The backend the settings name (it must work here), else the available one of
    highest priority: never whichever plugin happened to load first."""
    if configured:
        spec = plugins.select(specs, configured, what)
        if spec.factory is None or not spec.available():
            raise PluginError(f"the {what} {configured!r} is not available on this machine")
        return spec
    return _first_available(sorted(specs, key=lambda s: (-s.priority, s.name)), what)


def open_devices(plugins: Plugins, *, capture: str | None = None,
                 input: str | None = None) -> Devices:
    """Build the devices from the loaded plugins; capture is required, the rest optional.

    :param capture: the capture backend's name (``AgentSettings.capture``), else the
        available one of highest priority; ``input`` likewise. Each factory gets its
        plugin's options and nothing else.
    """
    capture_spec = choose_backend(plugins, plugins.capture_sources(), capture, "screen capture")
    if capture_spec is None or capture_spec.factory is None:
        raise RuntimeError("no screen-capture plugin works here (is there a display?)")
    input_spec = choose_backend(plugins, plugins.input_sinks(), input, "input injection")
    prompt_spec = _first_available(sorted(plugins.consent_prompts(), key=lambda p: -p.priority),
                                   "consent prompt")
    sink = None
    if input_spec is not None and input_spec.factory is not None:
        try:
            sink = input_spec.factory(**plugins.options(input_spec))
        except Exception as exc:
            log.warning("input injection disabled: %s", exc)
    prompt = prompt_spec.factory() if prompt_spec is not None and prompt_spec.factory else None
    return Devices(capture=capture_spec.factory(**plugins.options(capture_spec)), input=sink,
                   codecs=plugins.codecs(), prompt=prompt, clipboard=open_clipboard())

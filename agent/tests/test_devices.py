"""Capture and input backends are chosen by configured name, else by declared priority."""

from __future__ import annotations

import pytest
from remote_agent.devices import choose_backend

from remote_core import hookimpl
from remote_core.errors import PluginError
from remote_core.plugins import Plugins, get_plugin_manager
from remote_core.settings import PluginSettings
from remote_core.types import CaptureSpec


class Backends:
    """Three capture backends, registered in an order that is not their priority."""

    @hookimpl
    def register_capture_sources(self) -> list[CaptureSpec]:
        return [CaptureSpec(name="low", factory=object, priority=1),
                CaptureSpec(name="broken", factory=object, priority=9, available=lambda: False),
                CaptureSpec(name="high", factory=object, priority=5)]


def plugins() -> Plugins:
    return get_plugin_manager(PluginSettings(plugins=()), extra=[("backends", Backends())])


def test_the_available_backend_of_highest_priority_wins_over_load_order() -> None:
    specs = plugins().capture_sources()
    assert specs[0].name == "low"  # registered first
    chosen = choose_backend(plugins(), specs, None, "screen capture")
    assert chosen is not None and chosen.name == "high"


def test_a_configured_name_wins_and_must_work_here() -> None:
    loaded = plugins()
    chosen = choose_backend(loaded, loaded.capture_sources(), "low", "screen capture")
    assert chosen is not None and chosen.name == "low"
    with pytest.raises(PluginError, match=r"'broken' is not available on this machine"):
        choose_backend(loaded, loaded.capture_sources(), "broken", "screen capture")
    with pytest.raises(PluginError, match=r"no screen capture named 'x11'; available: broken"):
        choose_backend(loaded, loaded.capture_sources(), "x11", "screen capture")

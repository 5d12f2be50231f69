"""What the agent reports about itself: ``AgentStatus`` and ``DisplayInfo``."""

from __future__ import annotations

import os
import platform
import socket
import time
from collections.abc import Sequence

from remote_core.protocol import pb
from remote_core.types import DisplayDesc

from . import __version__
from .config import AgentConfig

__all__ = ["agent_status", "display_info"]

_STARTED = time.monotonic()


def _uptime() -> int:
    """Seconds since the machine booted (since the agent started where unknown)."""
    try:
        with open("/proc/uptime", encoding="ascii") as handle:
            return int(float(handle.read().split()[0]))
    except (OSError, ValueError, IndexError):
        return int(time.monotonic() - _STARTED)


def _elevated() -> bool:
    geteuid = getattr(os, "geteuid", None)
    return bool(geteuid is not None and geteuid() == 0)


def agent_status(config: AgentConfig, displays: list[DisplayDesc], streaming: bool,
                 plugins: Sequence[str] = ()) -> object:
    """What the agent says about itself; ``plugins`` are its loaded plugins, "name version"."""
    return pb.AgentStatus(
        hostname=socket.gethostname(), os_version=platform.platform(),
        is_elevated=_elevated(), uptime_secs=_uptime(), display_count=len(displays),
        is_streaming=streaming, agent_version=__version__,
        organization=config.organization, site=config.site, tags=list(config.tags),
        plugins=list(plugins))


def display_info(displays: list[DisplayDesc]) -> object:
    primary = next((d.id for d in displays if d.is_primary), displays[0].id if displays else 0)
    return pb.DisplayInfo(
        displays=[pb.Display(id=d.id, name=d.name, x=d.x, y=d.y, width=d.width,
                             height=d.height, is_primary=d.is_primary) for d in displays],
        primary_display=primary)

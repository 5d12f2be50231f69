"""The small core of the remote-support platform: wire protocol, plugin contracts, settings."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

import pluggy

PROJECT_NAME = "remote_core"
ENTRY_POINT_GROUP = "remote_core.plugins"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

try:
    __version__ = version("remote-core")
except PackageNotFoundError:  # pragma: no cover - running from a bare source tree
    __version__ = "0.0.0"

__all__ = ["ENTRY_POINT_GROUP", "PROJECT_NAME", "__version__", "hookimpl", "hookspec"]

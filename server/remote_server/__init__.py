"""The remote-support server: the relay, the web edge (REST API, sockets), the CLI.

Built on the core (``remote_core``: protocol, plugin contracts, settings) and
served by uvicorn; it never decodes video and imports no plugin.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("remote-support")
except PackageNotFoundError:  # pragma: no cover - running from a bare source tree
    __version__ = "0.0.0"

__all__ = ["__version__"]

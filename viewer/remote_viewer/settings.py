"""The Python viewer's settings: ``REMOTE_VIEWER_*`` variables.

The viewer loads codec plugins to decode what it is sent, so it takes the
plugin settings every program shares (``REMOTE_VIEWER_PLUGINS``,
``REMOTE_VIEWER_EXTRA_PLUGINS``, ``REMOTE_VIEWER_BLOCK_PLUGINS`` and
``REMOTE_VIEWER_PLUGIN_<NAME>_<KEY>``), and the authorities it trusts for
``wss://`` (``REMOTE_VIEWER_CA_BUNDLE``, in addition to the system's roots;
certificates are always verified).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from remote_core.plugins import CODEC_PLUGINS
from remote_core.settings import PluginSettings, option

__all__ = ["ViewerSettings"]


@dataclass(frozen=True, repr=False)
class ViewerSettings(PluginSettings):
    """Every setting of ``remote-viewer``."""

    ENV_PREFIX: ClassVar[str] = "REMOTE_VIEWER_"
    FILE_SECTION: ClassVar[str] = "viewer"
    DEFAULT_PLUGINS: ClassVar[tuple[str, ...] | None] = CODEC_PLUGINS

    ca_bundle: str = option(
        "", "PEM file of authorities trusted for the server's certificate, in addition to "
            "the system's (a private CA); certificates are always verified")

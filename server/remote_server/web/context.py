"""Everything one running server shares, built in the app's lifespan and kept on ``app.state``.

Handlers reach it as ``request.app.state.ctx`` (or ``websocket.app.state.ctx``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from remote_core.errors import ConfigError, PluginError
from remote_core.interfaces import RecordingStore, Store
from remote_core.plugins import Plugins

from ..relay.audit import Audit
from ..settings import ServerSettings

if TYPE_CHECKING:
    from ..cluster.node import ClusterNode
    from ..relay.directory import SessionDirectory
    from ..relay.registry import Registry
    from .pending import PendingSockets
    from .ratelimit import RateLimiter
    from .tokens import TokenService

__all__ = ["ServerContext", "open_store"]


@dataclass
class ServerContext:
    settings: ServerSettings
    plugins: Plugins
    store: Store
    audit: Audit
    tokens: TokenService
    limiter: RateLimiter
    registry: Registry
    """The relay's own: the sockets' endpoints and the lifespan use it."""
    pending: PendingSockets
    cluster: ClusterNode | None = None
    """This process as a cluster node; None when it is the only server."""
    recordings: RecordingStore | None = None
    """Where recordings are read back from (those made while recordings were on too)."""

    @property
    def directory(self) -> SessionDirectory:
        """Live sessions as the REST API may see them (a typed protocol, not the class):
        this process's, or in a cluster every node's."""
        return self.cluster.directory if self.cluster is not None else self.registry


def open_recording_store(settings: ServerSettings, plugins: Plugins) -> RecordingStore:
    """The recording store plugin for ``settings.recordings_url`` (not yet opened).

    :raises PluginError: no loaded plugin keeps recordings at such URLs.
    :raises ConfigError: that plugin cannot use this URL.
    """
    spec = plugins.recording_store_for_url(settings.recordings_url)
    if spec.factory is None:
        raise TypeError(f"recording store {spec.name!r} registered no factory")
    return spec.factory(settings.recordings_url)


def readable_recordings(settings: ServerSettings, plugins: Plugins) -> RecordingStore | None:
    """The recording store recordings are read from: while recordings are off, the one of
    ``recordings_url`` if a loaded plugin keeps such URLs (older recordings stay
    watchable), else None."""
    if not settings.recording_rules().records_any:
        try:
            return open_recording_store(settings, plugins)
        except (PluginError, ConfigError):
            return None
    return open_recording_store(settings, plugins)


def open_store(settings: ServerSettings, plugins: Plugins) -> Store:
    """The store plugin for ``settings.database_url`` (not yet opened)."""
    spec = plugins.store_for_url(settings.database_url)
    if spec.factory is None:
        raise TypeError(f"store {spec.name!r} registered no factory")
    return spec.factory(settings.database_url)


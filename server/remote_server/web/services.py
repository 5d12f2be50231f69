"""The plugins' background services (webhook delivery ...): built once per app."""

from __future__ import annotations

from remote_core.interfaces import Service
from remote_core.plugins import Plugins

__all__ = ["start_services"]


def start_services(plugins: Plugins) -> list[Service]:
    """Each registered service, built from its plugin's options; a bad option raises
    :class:`~remote_core.errors.ConfigError` before the server listens."""
    return [spec.factory(plugins.options(spec)) for spec in plugins.services()
            if spec.factory is not None]

"""Exception types shared by the core and plugins. Each names what was wrong."""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "ConflictError",
    "NotFoundError",
    "PluginError",
    "RemoteSupportError",
    "SessionRefused",
    "StoreError",
]


class RemoteSupportError(Exception):
    """Base of every error the project raises on purpose."""


class ConfigError(RemoteSupportError):
    """A setting is missing or invalid; the message names the setting and what would be right."""


class PluginError(RemoteSupportError):
    """A plugin is missing, broken, duplicated or misconfigured."""


class SessionRefused(RemoteSupportError):
    """A session cannot be established or go on; ``str()`` is safe to show the peer.

    The one refusal on both ends: the server raises it to answer a ``SessionRequest``
    with ``success=false``, and the agent and the viewer raise it when they are given
    such an answer.
    """


class StoreError(RemoteSupportError):
    """The storage backend failed in a way the caller cannot recover from here."""


class ConflictError(StoreError):
    """A write collided with an existing row (duplicate username, release version ...)."""


class NotFoundError(StoreError):
    """The row the caller named does not exist (or is soft-deleted)."""

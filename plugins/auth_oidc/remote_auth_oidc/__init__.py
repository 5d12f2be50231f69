"""Plugin ``auth_oidc``: technicians sign in through an OpenID Connect provider.

Not loaded by default: add it with ``EXTRA_PLUGINS=auth_oidc`` and configure it under
``[plugins.auth_oidc]`` (or ``REMOTE_SUPPORT_PLUGIN_AUTH_OIDC_*``). It mounts its routes
at ``/auth/oidc``; the console shows a "Sign in with ..." button when they answer.
Local accounts keep working beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from remote_core import hookimpl
from remote_core.types import WebAppSpec

from .app import OidcRouter, make_router
from .config import OidcConfig

__all__ = ["OidcConfig", "make_app", "register_web_apps"]


def make_app(options: Mapping[str, Any]) -> OidcRouter:
    """The login routes for the plugin's options (ConfigError on a bad one)."""
    return make_router(OidcConfig.from_options(options))


@hookimpl
def register_web_apps() -> list[WebAppSpec]:
    return [WebAppSpec(name="auth_oidc", path="/auth/oidc", factory=make_app)]

"""Built-in plugin ``webhooks``: signed webhooks for session and security events.

Loaded by the server by default and idle until a target is configured
(``[plugins.webhooks]`` or ``REMOTE_SUPPORT_PLUGIN_WEBHOOKS_*``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from remote_core import hookimpl
from remote_core.types import ServiceSpec

from .config import WebhookConfig
from .service import WebhookService
from .signing import sign, verify

__all__ = ["WebhookConfig", "WebhookService", "make_service", "register_services", "sign",
           "verify"]


def make_service(options: Mapping[str, Any]) -> WebhookService:
    """The delivery service for the plugin's options (ConfigError on a bad one)."""
    return WebhookService(WebhookConfig.from_options(options))


@hookimpl
def register_services() -> list[ServiceSpec]:
    return [ServiceSpec(name="webhooks", factory=make_service)]

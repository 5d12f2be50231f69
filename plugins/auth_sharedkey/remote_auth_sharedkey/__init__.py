"""Built-in plugin ``auth_sharedkey``: the deprecated shared agent key (SPEC 5.2).

One key, the plugin's option ``key`` (``REMOTE_SUPPORT_SHARED_AGENT_KEY``, CONTRACT 4,
or ``key`` under ``[plugins.auth_sharedkey]`` in the settings file), admits any
agent. It is kept for old installations only: every use logs a warning, an
unset or empty key never matches, and the comparison is constant-time.
Shared-key agents are not authoritative: they are identified per SPEC 5.4.
"""

from __future__ import annotations

import hmac
import logging

from remote_core import hookimpl
from remote_core.errors import ConfigError
from remote_core.interfaces import Authenticator
from remote_core.logsafe import peer_text
from remote_core.types import AgentCredential, AgentIdentity, AuthContext, AuthMethod

__all__ = ["SharedKeyAuthenticator"]

log = logging.getLogger(__name__)


class SharedKeyAuthenticator(Authenticator):
    """Recognises the configured shared key, and nothing when none is configured."""

    def __init__(self, context: AuthContext) -> None:
        key = context.options.get("key") or ""
        if not isinstance(key, str):
            raise ConfigError("option 'key' of plugin auth_sharedkey must be text")
        self._key = key.encode("utf-8")

    async def authenticate(self, credential: AgentCredential) -> AgentIdentity | None:
        if not self._key or not hmac.compare_digest(credential.token.encode("utf-8"), self._key):
            return None
        log.warning("agent %s (from %s) authenticated with the deprecated shared agent key; "
                    "issue it a per-agent cak_ key", peer_text(credential.agent_id),
                    credential.client_ip or "?")
        return AgentIdentity(method="sharedkey", agent_id=credential.agent_id,
                             machine_uid=credential.machine_uid, persistent=True)


@hookimpl
def register_auth_methods() -> list[AuthMethod]:
    return [AuthMethod(name="sharedkey", order=90, factory=SharedKeyAuthenticator)]

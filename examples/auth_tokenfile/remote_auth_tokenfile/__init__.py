"""An agent-authentication plugin from outside the project: enrolment tokens in a file.

Another system (an MDM, a provisioning script) writes a JSON object mapping
each machine's enrolment token to the ``agent_id`` an operator pre-registered
(``POST /api/machines``); an agent presenting a token is that machine. The
file is read at every attempt, so a token added or removed takes effect at
once. It issues no keys: with it in place of ``auth_agentkey``, the server's
key endpoint answers that no loaded method issues keys.

Where the file is comes from the plugin's option ``file``: ``[plugins.auth_tokenfile]
file = "..."`` in the server's settings file, or ``REMOTE_SUPPORT_PLUGIN_AUTH_TOKENFILE_FILE``.
"""

from __future__ import annotations

import hmac
import json
from pathlib import Path

from remote_core import hookimpl
from remote_core.interfaces import Authenticator
from remote_core.types import AgentCredential, AgentIdentity, AuthContext, AuthMethod, AuthRejected

__all__ = ["PREFIX", "TokenFileAuthenticator"]

PREFIX = "enrol_"


class TokenFileAuthenticator(Authenticator):
    """Recognises ``enrol_`` tokens; refuses those the file does not list."""

    def __init__(self, context: AuthContext) -> None:
        self._path = Path(str(context.options.get("file", "enrolment-tokens.json")))

    async def authenticate(self, credential: AgentCredential) -> AgentIdentity | None:
        if not credential.token.startswith(PREFIX):
            return None
        try:
            tokens: dict[str, str] = json.loads(self._path.read_text())
        except (OSError, ValueError) as exc:
            raise AuthRejected(f"enrolment tokens cannot be read: {type(exc).__name__}") from None
        for token, agent_id in tokens.items():
            if hmac.compare_digest(token.encode(), credential.token.encode()):
                return AgentIdentity(method="tokenfile", agent_id=agent_id, machine_uid=None,
                                     authoritative=True, persistent=True)
        raise AuthRejected("unknown enrolment token")


@hookimpl
def register_auth_methods() -> list[AuthMethod]:
    return [AuthMethod(name="tokenfile", order=15, factory=TokenFileAuthenticator)]

"""Built-in plugin ``auth_agentkey``: per-agent ``cak_`` keys (SPEC 5.2).

A key is ``cak_`` followed by 256 bits of secure randomness in URL-safe text.
Only its SHA-256 hex digest is stored; a presented key is hashed, looked up
among the non-revoked hashes and compared in constant time. A keyed agent is
authoritative for its identity: it is the machine its key belongs to.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets

from remote_core import hookimpl
from remote_core.interfaces import Authenticator
from remote_core.logsafe import peer_text
from remote_core.types import AgentCredential, AgentIdentity, AuthContext, AuthMethod, AuthRejected

__all__ = ["KEY_PREFIX", "AgentKeyAuthenticator", "generate_agent_key", "hash_agent_key"]

log = logging.getLogger(__name__)

KEY_PREFIX = "cak_"
_KEY_BYTES = 32  # 256 bits (SPEC 5.2)


def generate_agent_key() -> tuple[str, str]:
    """A new key: ``(plain, sha256 hex)``. The plain key is shown once and never stored."""
    plain = KEY_PREFIX + secrets.token_urlsafe(_KEY_BYTES)
    return plain, hash_agent_key(plain)


def hash_agent_key(plain: str) -> str:
    """The SHA-256 hex digest under which a key is stored and looked up."""
    return hashlib.sha256(plain.encode("utf-8")).hexdigest()


class AgentKeyAuthenticator(Authenticator):
    """Recognises ``cak_`` credentials; refuses unknown and revoked keys."""

    def __init__(self, context: AuthContext) -> None:
        self._store = context.store

    async def authenticate(self, credential: AgentCredential) -> AgentIdentity | None:
        if not credential.token.startswith(KEY_PREFIX):
            return None
        digest = hash_agent_key(credential.token)
        key = await self._store.find_agent_key(digest)
        if key is None or key.revoked_at is not None or not hmac.compare_digest(
            key.key_hash.encode("ascii"), digest.encode("ascii")
        ):
            raise AuthRejected("unknown or revoked agent key")
        if credential.agent_id and credential.agent_id != key.agent_id:
            # The normal case, not a warning: an agent makes up its own agent_id at first
            # run, and a machine created through the API has another; the key decides.
            log.debug("keyed agent claimed agent_id %s; its key belongs to machine %s",
                      peer_text(credential.agent_id), key.agent_id)
        try:
            await self._store.touch_agent_key(key.id)
        except Exception:
            log.exception("could not record the use of agent key %s", key.id)
        return AgentIdentity(method="agentkey", agent_id=key.agent_id, machine_uid=None,
                             authoritative=True, persistent=True, key_id=key.id)


@hookimpl
def register_auth_methods() -> list[AuthMethod]:
    return [AuthMethod(name="agentkey", order=10, factory=AgentKeyAuthenticator,
                       issue_key=generate_agent_key)]

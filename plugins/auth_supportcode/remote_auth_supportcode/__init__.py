"""Built-in plugin ``auth_supportcode``: one-time support codes ``XXX-XXX-XXX`` (SPEC 3.2, 8).

Validation never consumes a code: this authenticator only checks that the
code exists and is still usable. The relay's registry consumes it when it
binds the session, in the same step that moves the in-memory code from
Pending to Connected, with the database's conditional update deciding
between racing presenters.
"""

from __future__ import annotations

import re
import secrets

from remote_core import hookimpl
from remote_core.interfaces import Authenticator
from remote_core.records import utcnow
from remote_core.types import AgentCredential, AgentIdentity, AuthContext, AuthMethod, AuthRejected

__all__ = [
    "CODE_ALPHABET",
    "SupportCodeAuthenticator",
    "generate_support_code",
    "is_support_code",
    "normalize_code",
]

CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
"""31 characters: no 0, O, 1, I or L (SPEC 8)."""

_CODE = re.compile(rf"^[{CODE_ALPHABET}]{{3}}-[{CODE_ALPHABET}]{{3}}-[{CODE_ALPHABET}]{{3}}$")


def generate_support_code() -> str:
    """A new code, each character drawn uniformly from a secure source (about 44.6 bits)."""
    chars = "".join(secrets.choice(CODE_ALPHABET) for _ in range(9))
    return f"{chars[0:3]}-{chars[3:6]}-{chars[6:9]}"


def normalize_code(text: str) -> str:
    """What a person typed, as the code is stored: trimmed and upper-case."""
    return text.strip().upper()


def is_support_code(text: str) -> bool:
    """True when ``text`` has the shape of a support code (not that the code exists)."""
    return _CODE.match(normalize_code(text)) is not None


class SupportCodeAuthenticator(Authenticator):
    """Recognises support codes; refuses unknown, expired, cancelled and used ones."""

    def __init__(self, context: AuthContext) -> None:
        self._store = context.store

    async def authenticate(self, credential: AgentCredential) -> AgentIdentity | None:
        if not is_support_code(credential.token):
            return None
        code = normalize_code(credential.token)
        row = await self._store.get_support_code(code)
        if row is None or row.cancelled_at is not None or row.expires_at <= utcnow():
            raise AuthRejected("unknown or expired support code")
        if row.consumed_at is not None:
            raise AuthRejected("support code already used")
        user = await self._store.get_user(row.created_by) if row.created_by else None
        return AgentIdentity(
            method="supportcode",
            agent_id=credential.agent_id,
            machine_uid=credential.machine_uid,
            attended=True,
            persistent=False,
            support_code=code,
            technician_name=user.username if user is not None else row.technician_name,
            technician_id=row.created_by,
        )


@hookimpl
def register_auth_methods() -> list[AuthMethod]:
    return [AuthMethod(name="supportcode", order=20, factory=SupportCodeAuthenticator)]

"""Built-in plugin ``auth_supportcode``: one-time support codes ``XXX-XXX-XXX`` (SPEC 3.2, 8).

Validation never consumes a code: this authenticator only checks that the
code exists and is still usable. The relay's registry consumes it when it
binds the session, in the same step that moves the in-memory code from
Pending to Connected, with the database's conditional update deciding
between racing presenters.
"""

from __future__ import annotations

from remote_core import hookimpl
from remote_core.interfaces import Authenticator
from remote_core.records import utcnow
from remote_core.supportcode import normalize_support_code
from remote_core.types import AgentCredential, AgentIdentity, AuthContext, AuthMethod, AuthRejected

__all__ = ["SupportCodeAuthenticator"]


class SupportCodeAuthenticator(Authenticator):
    """Recognises support codes; refuses unknown, expired, cancelled and used ones."""

    def __init__(self, context: AuthContext) -> None:
        self._store = context.store

    async def authenticate(self, credential: AgentCredential) -> AgentIdentity | None:
        code = normalize_support_code(credential.token)
        if code is None:
            return None
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
    return [AuthMethod(name="supportcode", order=20, factory=SupportCodeAuthenticator,
                       accepts_support_codes=True)]

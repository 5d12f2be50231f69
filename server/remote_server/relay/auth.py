"""Agent authentication: the auth plugins in order, and what no plugin may accept.

A user JWT is never an agent credential (SPEC 5.2), so a token of JWT shape
is refused before any method sees it, whatever plugins are installed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from remote_core.errors import SessionRefused
from remote_core.interfaces import Authenticator, Store
from remote_core.plugins import Plugins
from remote_core.types import AgentCredential, AgentIdentity, AuthContext, AuthRejected

__all__ = ["NotReady", "Unavailable", "authenticate", "authenticators", "looks_like_jwt",
           "looks_like_support_code"]

log = logging.getLogger(__name__)

_JWT = re.compile(r"^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$")
_CODE_SHAPE = re.compile(r"^[A-Za-z0-9]{9}$")
_MAX_TOKEN = 4096


class NotReady(SessionRefused):
    """Refused for the session's state (gone, or awaiting its own consent), not the user's."""


class Unavailable(SessionRefused):
    """Not the peer's fault: the database is away. The agent retries with its backoff, and
    the attempt does not count against the support-code limit."""


def authenticators(plugins: Plugins, store: Store) -> list[Authenticator]:
    """The loaded authentication methods' authenticators, in their order."""
    return [m.factory(AuthContext(options=plugins.options(m), store=store))
            for m in plugins.auth_methods() if m.factory is not None]


def looks_like_jwt(token: str) -> bool:
    return _JWT.match(token) is not None


def looks_like_support_code(token: str) -> bool:
    """Shaped like ``XXX-XXX-XXX`` (any letters and digits, dashes and spaces optional):
    every such attempt counts against the support-code rate limit."""
    return _CODE_SHAPE.match(re.sub(r"[\s-]", "", token)) is not None


async def authenticate(authenticators: Sequence[Authenticator],
                       credential: AgentCredential) -> AgentIdentity:
    """The first method that recognises the credential decides; none recognising it refuses."""
    token = credential.token
    if not token:
        raise SessionRefused("session_token is required: an agent key, a support code or "
                             "the shared key")
    if len(token) > _MAX_TOKEN:
        raise SessionRefused("session_token is too long")
    if looks_like_jwt(token):
        raise SessionRefused("a user token is not an agent credential")
    for authenticator in authenticators:
        try:
            identity = await authenticator.authenticate(credential)
        except AuthRejected as exc:
            raise SessionRefused(str(exc) or "credential refused") from None
        if identity is not None:
            return identity
    raise SessionRefused("unrecognised agent credential")

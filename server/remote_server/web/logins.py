"""Opening a login: a login session row (listed and ended by its user) and the login
token that names it (``jti``), under the user's current token generation."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import timedelta

from remote_core.records import LoginSession, User, utcnow

from .context import ServerContext

__all__ = ["MAX_USER_AGENT", "open_login"]

MAX_USER_AGENT = 256


async def open_login(ctx: ServerContext, user: User, methods: Sequence[str], *,
                     client_ip: str, user_agent: str) -> str:
    """A login token for ``user``, recorded as one of their login sessions."""
    generation = (await ctx.store.get_second_factors(user.id)).token_generation
    now = utcnow()
    session = LoginSession(id=uuid.uuid4().hex, user_id=user.id, created_at=now,
                           expires_at=now + timedelta(seconds=ctx.tokens.login_ttl),
                           client_ip=client_ip,
                           user_agent=user_agent[:MAX_USER_AGENT].encode(
                               "ascii", "replace").decode(),
                           methods=tuple(methods))
    await ctx.store.add_login_session(session)
    return ctx.tokens.mint_login(user, generation=generation, methods=methods,
                                 token_id=session.id)

"""Ending every live token of a user at once: raise their token generation in the store
(every node checks it on each request and each viewer join) and close their live viewer
sockets on every node (1008, with the reason)."""

from __future__ import annotations

from remote_core.records import AuditEvent, User, tenant_of

from .context import ServerContext

__all__ = ["revoke_tokens"]


async def revoke_tokens(ctx: ServerContext, user: User, reason: str, *,
                        actor: str | None = None, client_ip: str | None = None) -> int:
    """Void ``user``'s login and viewer tokens and close their viewers; the new generation."""
    generation = await ctx.store.bump_token_generation(user.id)
    await ctx.store.end_login_sessions(user.id)
    await ctx.directory.user_changed(user.id, revoked=reason)
    await ctx.audit.record(AuditEvent(kind="auth.tokens_revoked", actor=actor or user.username,
                                      target=user.id, client_ip=client_ip,
                                      detail={"reason": reason},
                                      tenant_id=tenant_of(user.tenant_id)))
    return generation

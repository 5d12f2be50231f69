"""The token-signing key ring: where it comes from, how it is kept fresh and rotated (T17).

A configured ``REMOTE_SUPPORT_JWT_SECRET`` is a ring of one key, rotated by
changing the setting (its tokens then stop at once). Otherwise the ring is the
store's: seeded with the secret generated at first start, and rotated by
``remote-support secret rotate``, which makes a new random key current and lets
the previous one verify for an overlap of at least the longest token lifetime,
so logged-in operators and viewer tokens already handed out keep working. A
running server rereads the ring every ``signing_key_refresh`` seconds.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

import anyio

from remote_core.errors import ConfigError
from remote_core.interfaces import Store
from remote_core.records import AuditEvent, SigningKey, utcnow

from ..relay.audit import Audit
from ..settings import ServerSettings
from .tokens import VIEWER_TOKEN_TTL, KeyRing, TokenService, key_id

__all__ = ["Rotation", "keep_fresh", "load_key_ring", "longest_token_life",
           "rotate"]

log = logging.getLogger(__name__)

LEGACY_SECRET_NAME = "jwt_signing_key"  # noqa: S105 (a row name, not a secret)
"""The secret generated at first start (before key rotation it was the only key)."""


def longest_token_life(settings: ServerSettings) -> int:
    return max(settings.login_token_ttl, VIEWER_TOKEN_TTL)


async def load_key_ring(settings: ServerSettings, store: Store) -> KeyRing:
    """The configured secret as a ring of one, else the store's ring (seeded if empty)."""
    if settings.jwt_secret:
        return KeyRing.single(settings.jwt_secret)
    first = await store.get_or_create_secret(LEGACY_SECRET_NAME, secrets.token_urlsafe(64))
    seed = SigningKey(kid=key_id(first), secret=first, created_at=utcnow())
    return KeyRing(await store.signing_keys(seed))


async def keep_fresh(tokens: TokenService, settings: ServerSettings, store: Store) -> None:
    """Reread the ring every ``signing_key_refresh`` seconds (runs until cancelled)."""
    if settings.jwt_secret:
        return
    while True:
        await anyio.sleep(settings.signing_key_refresh)
        try:
            ring = await load_key_ring(settings, store)
        except Exception:
            log.warning("could not reread the signing keys; keeping the ones known",
                        exc_info=True)
            continue
        if ring.current.kid != tokens.ring.current.kid:
            log.info("tokens are now signed with key %s", ring.current.kid)
        tokens.ring = ring


@dataclass(frozen=True)
class Rotation:
    current: str
    previous: str
    previous_until: datetime


async def rotate(settings: ServerSettings, store: Store, audit: Audit,
                 overlap: float | None = None) -> Rotation:
    """Make a new random key current; the previous one verifies for ``overlap`` seconds
    (default: the longest token lifetime plus one refresh of the running servers, which
    sign with the previous key until they reread the ring)."""
    if settings.jwt_secret:
        raise ConfigError("the signing secret is set by REMOTE_SUPPORT_JWT_SECRET: rotate it "
                          "there (tokens signed with the old value stop at once)")
    shortest = longest_token_life(settings)
    if overlap is None:
        overlap = shortest + settings.signing_key_refresh
    if overlap < shortest:
        raise ConfigError(f"the overlap must be at least the longest token lifetime, "
                          f"{shortest} s, so no token dies before its time; got {overlap:g} s")
    previous = (await load_key_ring(settings, store)).current
    secret = secrets.token_urlsafe(64)
    now = utcnow()
    new = SigningKey(kid=key_id(secret), secret=secret, created_at=now)
    until = now + timedelta(seconds=overlap)
    await store.rotate_signing_key(new, until)
    await audit.record(AuditEvent(
        kind="auth.signing_key_rotated", actor="remote-support secret rotate", target=new.kid,
        detail={"previous_kid": previous.kid, "previous_verifies_until": until.isoformat()}))
    return Rotation(current=new.kid, previous=previous.kid, previous_until=until)

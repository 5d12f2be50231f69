"""Operator accounts: Argon2id password hashing and the few operations the CLI and API share."""

from __future__ import annotations

import base64
import os
import secrets
import uuid
from collections.abc import Sequence

import anyio.to_thread
from anyio import CapacityLimiter
from anyio.lowlevel import RunVar
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from remote_core.errors import ConfigError, NotFoundError
from remote_core.interfaces import Store
from remote_core.records import PERMISSIONS, User, tenant_of, utcnow

__all__ = [
    "FIRST_ADMIN_NAME",
    "authenticate",
    "check_password",
    "create_user",
    "ensure_first_admin",
    "hash_password",
    "set_password",
    "tenant_disabled",
]

_hasher = PasswordHasher()  # argon2-cffi's current defaults: Argon2id, RFC 9106 low-memory

# Argon2id is CPU- and memory-hard (64 MiB each) on purpose: a burst of logins would
# otherwise run one hash per worker thread, taking the memory and every core from the
# event loop and the relay behind it. Hashes run on all cores but one; the rest queue.
HASHING_AT_ONCE = max(1, (os.cpu_count() or 2) - 1)
_hashing: RunVar[CapacityLimiter] = RunVar("password_hashing")

MIN_PASSWORD_LENGTH = 8
FIRST_ADMIN_NAME = "admin"


def _zeros(size: int) -> str:
    """``size`` zero bytes as PHC strings write them (base64, no padding)."""
    return base64.b64encode(bytes(size)).decode().rstrip("=")


# Verified against when the username is unknown, so a miss costs what a hit costs: a hash
# in the hasher's own parameters (what a verification costs) that no password matches.
# Written out, not hashed at import, which cost every process importing this 0.15 s.
_DUMMY_HASH = (f"$argon2id$v=19$m={_hasher.memory_cost},t={_hasher.time_cost},"
               f"p={_hasher.parallelism}${_zeros(_hasher.salt_len)}${_zeros(_hasher.hash_len)}")


def _validate_password(password: str) -> None:
    if len(password) < MIN_PASSWORD_LENGTH:
        raise ConfigError(f"a password needs at least {MIN_PASSWORD_LENGTH} characters")


def _hashing_limiter() -> CapacityLimiter:
    try:
        return _hashing.get()
    except LookupError:
        limiter = CapacityLimiter(HASHING_AT_ONCE)
        _hashing.set(limiter)
        return limiter


async def hash_password(password: str) -> str:
    """Argon2id hash, computed in a worker thread so the event loop keeps serving."""
    return await anyio.to_thread.run_sync(_hasher.hash, password, limiter=_hashing_limiter())


async def check_password(password_hash: str, password: str) -> bool:
    """Verify off the event loop; any malformed hash is a mismatch."""
    def verify() -> bool:
        try:
            return _hasher.verify(password_hash, password)
        except (VerificationError, InvalidHashError):
            return False

    return await anyio.to_thread.run_sync(verify, limiter=_hashing_limiter())


async def create_user(store: Store, username: str, password: str, role: str = "technician",
                      permissions: Sequence[str] = ()) -> User:
    """Create an account; admins hold every permission and access to every organization."""
    _validate_password(password)
    unknown = sorted(set(permissions) - set(PERMISSIONS))
    if unknown:
        raise ConfigError(f"unknown permission(s) {unknown}; known: {list(PERMISSIONS)}")
    if role not in ("admin", "technician"):
        raise ConfigError(f"role must be admin or technician, got {role!r}")
    is_admin = role == "admin"
    user = User(
        id=str(uuid.uuid4()),
        username=username,
        password_hash=await hash_password(password),
        role="admin" if is_admin else "technician",
        permissions=tuple(PERMISSIONS) if is_admin else tuple(permissions),
        client_access=("*",) if is_admin else (),
        created_at=utcnow(),
    )
    return await store.create_user(user)


async def set_password(store: Store, username: str, password: str) -> None:
    _validate_password(password)
    user = await store.get_user_by_username(username)
    if user is None:
        raise NotFoundError(f"no user named {username!r}")
    await store.update_user(user.id, password_hash=await hash_password(password))


async def authenticate(store: Store, username: str, password: str) -> User | None:
    """The enabled user with these credentials, else ``None`` (in constant work either way)."""
    user = await store.get_user_by_username(username)
    ok = await check_password(user.password_hash if user else _DUMMY_HASH, password)
    if user is None or not ok or user.disabled:
        return None
    return user


async def tenant_disabled(store: Store, user: User) -> bool:
    """Whether ``user``'s tenant is disabled (or gone): no login opens for them."""
    tenant = await store.get_tenant(tenant_of(user.tenant_id))
    return tenant is None or tenant.disabled


async def ensure_first_admin(store: Store, password: str | None) -> str | None:
    """Create user ``admin`` when no user exists (race-free across processes).

    :returns: the generated password when one was made up here and the account was
        created by this call; the caller shows it once. ``None`` otherwise.
    """
    if await store.list_users():
        return None  # the common case; create_first_admin below settles any race
    generated = None if password else secrets.token_urlsafe(18)
    chosen = password or generated
    assert chosen is not None
    _validate_password(chosen)
    user = User(
        id=str(uuid.uuid4()),
        username=FIRST_ADMIN_NAME,
        password_hash=await hash_password(chosen),
        role="admin",
        permissions=tuple(PERMISSIONS),
        client_access=("*",),
        created_at=utcnow(),
    )
    created = await store.create_first_admin(user)
    return generated if created else None

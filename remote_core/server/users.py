"""Operator accounts: Argon2id password hashing and the few operations the CLI and API share."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import anyio.to_thread
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from ..errors import ConfigError, NotFoundError
from ..interfaces import Store
from ..records import PERMISSIONS, User, utcnow

__all__ = ["check_password", "create_user", "hash_password", "set_password"]

_hasher = PasswordHasher()  # argon2-cffi's current defaults: Argon2id, RFC 9106 low-memory

MIN_PASSWORD_LENGTH = 8


def _validate_password(password: str) -> None:
    if len(password) < MIN_PASSWORD_LENGTH:
        raise ConfigError(f"a password needs at least {MIN_PASSWORD_LENGTH} characters")


async def hash_password(password: str) -> str:
    """Argon2id hash, computed in a worker thread so the event loop keeps serving."""
    return await anyio.to_thread.run_sync(_hasher.hash, password)


async def check_password(password_hash: str, password: str) -> bool:
    """Verify off the event loop; any malformed hash is a mismatch."""
    def verify() -> bool:
        try:
            return _hasher.verify(password_hash, password)
        except (VerificationError, InvalidHashError):
            return False

    return await anyio.to_thread.run_sync(verify)


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

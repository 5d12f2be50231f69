"""Users with their permissions, client access and login addresses, and the server's stored
secrets and token-signing key ring."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from remote_core.records import DEFAULT_TENANT_ID, Keyset, SigningKey, User

from ._migrate import exclusive
from ._schema import (
    login_addresses,
    login_sessions,
    passkeys,
    recovery_codes,
    secrets,
    signing_keys,
    user_client_access,
    user_factors,
    user_permissions,
    users,
    webauthn_challenges,
)
from ._sql import in_tenant, insert, keyset_page, values_given

_CHILDREN = ((user_permissions, "permission"), (user_client_access, "organization"))


def _users_from_rows(conn: Connection, rows: Sequence[Any]) -> list[User]:
    """Records for ``rows``, with their permissions and client access (two more queries)."""
    ids = [row.id for row in rows]
    grants: dict[str, dict[str, list[str]]] = {"permission": defaultdict(list),
                                               "organization": defaultdict(list)}
    for table, column in _CHILDREN:
        found = conn.execute(sa.select(table.c.user_id, table.c[column])
                             .where(table.c.user_id.in_(ids)).order_by(table.c[column]))
        for user_id, value in found:
            grants[column][user_id].append(value)
    return [
        User(
            id=row.id, username=row.username, password_hash=row.password_hash,
            role="admin" if row.role == "admin" else "technician",
            permissions=tuple(grants["permission"][row.id]),
            client_access=tuple(grants["organization"][row.id]),
            disabled=bool(row.disabled), created_at=row.created_at,
            tenant_id=row.tenant_id or DEFAULT_TENANT_ID,
        )
        for row in rows
    ]


def _replace_children(conn: Connection, user_id: str, permissions: Sequence[str] | None,
                      client_access: Sequence[str] | None) -> None:
    for (table, column), values in zip(_CHILDREN, (permissions, client_access), strict=True):
        if values is None:
            continue
        conn.execute(sa.delete(table).where(table.c.user_id == user_id))
        unique = sorted(set(values))
        if unique:
            conn.execute(sa.insert(table), [
                {"user_id": user_id, column: value, "tenant_id": DEFAULT_TENANT_ID}
                for value in unique
            ])


def create_user(conn: Connection, user: User, now: datetime) -> User:
    conn.execute(sa.insert(users).values(
        id=user.id, username=user.username, password_hash=user.password_hash, role=user.role,
        disabled=user.disabled, created_at=user.created_at or now, tenant_id=user.tenant_id,
    ))
    _replace_children(conn, user.id, user.permissions, user.client_access)
    created = get_user(conn, user.id)
    assert created is not None
    return created


def create_first_admin(conn: Connection, user: User, now: datetime) -> bool:
    """Insert ``user`` only when no user exists, serialised across processes."""
    exclusive(conn, "first_admin")
    if conn.execute(sa.select(users.c.id).limit(1)).first() is not None:
        return False
    create_user(conn, user, now)
    return True


def get_user(conn: Connection, user_id: str) -> User | None:
    rows = conn.execute(sa.select(users).where(users.c.id == user_id)).all()
    return next(iter(_users_from_rows(conn, rows)), None)


def get_user_by_username(conn: Connection, username: str) -> User | None:
    rows = conn.execute(sa.select(users).where(users.c.username == username)).all()
    return next(iter(_users_from_rows(conn, rows)), None)


def list_users(conn: Connection, after: Keyset | None, limit: int | None,
               tenant_id: str | None) -> list[User]:
    query = sa.select(users)
    if tenant_id is not None:
        query = query.where(in_tenant(users.c.tenant_id, tenant_id))
    query = keyset_page(query, users.c.created_at, users.c.id, after=after, limit=limit,
                        newest_first=False)
    return _users_from_rows(conn, conn.execute(query).all())


def update_user(conn: Connection, user_id: str, *, password_hash: str | None,
                role: str | None, disabled: bool | None, permissions: Sequence[str] | None,
                client_access: Sequence[str] | None) -> User | None:
    if conn.execute(sa.select(users.c.id).where(users.c.id == user_id)).first() is None:
        return None
    changes = values_given(password_hash=password_hash, role=role, disabled=disabled)
    if changes:
        conn.execute(sa.update(users).where(users.c.id == user_id).values(changes))
    _replace_children(conn, user_id, permissions, client_access)
    return get_user(conn, user_id)


def delete_user(conn: Connection, user_id: str) -> bool:
    for table, _ in _CHILDREN:
        conn.execute(sa.delete(table).where(table.c.user_id == user_id))
    conn.execute(sa.delete(login_addresses).where(login_addresses.c.user_id == user_id))
    conn.execute(sa.delete(recovery_codes).where(recovery_codes.c.user_id == user_id))
    conn.execute(sa.delete(user_factors).where(user_factors.c.user_id == user_id))
    conn.execute(sa.delete(login_sessions).where(login_sessions.c.user_id == user_id))
    conn.execute(sa.delete(passkeys).where(passkeys.c.user_id == user_id))
    conn.execute(sa.delete(webauthn_challenges).where(webauthn_challenges.c.user_id == user_id))
    return conn.execute(sa.delete(users).where(users.c.id == user_id)).rowcount == 1


def get_or_create_secret(conn: Connection, name: str, value: str, now: datetime) -> str:
    """The first writer's value wins; everyone else reads it back."""
    conn.execute(insert(conn, secrets).values(name=name, value=value, created_at=now)
                 .on_conflict_do_nothing(index_elements=[secrets.c.name]))
    stored: str = conn.execute(sa.select(secrets.c.value)
                               .where(secrets.c.name == name)).scalar_one()
    return stored


def signing_key_ring(conn: Connection) -> list[SigningKey]:
    rows = conn.execute(sa.select(signing_keys)
                        .order_by(signing_keys.c.created_at, signing_keys.c.kid))
    return [SigningKey(kid=row.kid, secret=row.secret, created_at=row.created_at,
                       verify_until=row.verify_until) for row in rows]


def _add_key(conn: Connection, key: SigningKey) -> None:
    conn.execute(sa.insert(signing_keys).values(kid=key.kid, secret=key.secret,
                                                created_at=key.created_at,
                                                verify_until=key.verify_until))


def seeded_signing_keys(conn: Connection, seed: SigningKey) -> list[SigningKey]:
    exclusive(conn, "signing_keys")
    ring = signing_key_ring(conn)
    if ring:
        return ring
    _add_key(conn, seed)
    return [seed]


def rotate_signing_key(conn: Connection, new: SigningKey, previous_until: datetime,
                       now: datetime) -> list[SigningKey]:
    exclusive(conn, "signing_keys")
    conn.execute(sa.delete(signing_keys).where(signing_keys.c.verify_until <= now))
    conn.execute(sa.update(signing_keys).where(signing_keys.c.verify_until.is_(None))
                 .values(verify_until=previous_until))
    _add_key(conn, new)
    return signing_key_ring(conn)


def record_login_address(conn: Connection, user_id: str, client_ip: str, keep: int,
                         now: datetime) -> None:
    conn.execute(insert(conn, login_addresses)
                 .values(user_id=user_id, client_ip=client_ip, last_login_at=now)
                 .on_conflict_do_update(index_elements=[login_addresses.c.user_id,
                                                        login_addresses.c.client_ip],
                                        set_={"last_login_at": now}))
    newest = (sa.select(login_addresses.c.client_ip)
              .where(login_addresses.c.user_id == user_id)
              .order_by(login_addresses.c.last_login_at.desc(), login_addresses.c.client_ip)
              .limit(keep))
    conn.execute(sa.delete(login_addresses)
                 .where(login_addresses.c.user_id == user_id,
                        login_addresses.c.client_ip.not_in(newest.scalar_subquery())))


def is_login_address(conn: Connection, user_id: str, client_ip: str) -> bool:
    found = conn.execute(sa.select(login_addresses.c.client_ip)
                         .where(login_addresses.c.user_id == user_id,
                                login_addresses.c.client_ip == client_ip)).first()
    return found is not None

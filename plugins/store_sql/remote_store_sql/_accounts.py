"""Users with their permissions and client access, and the server's stored secrets."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from remote_core.records import DEFAULT_TENANT_ID, User

from ._migrate import exclusive
from ._schema import secrets, user_client_access, user_permissions, users
from ._sql import insert, values_given

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


def list_users(conn: Connection) -> list[User]:
    return _users_from_rows(conn, conn.execute(sa.select(users).order_by(users.c.username)).all())


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
    return conn.execute(sa.delete(users).where(users.c.id == user_id)).rowcount == 1


def get_or_create_secret(conn: Connection, name: str, value: str, now: datetime) -> str:
    """The first writer's value wins; everyone else reads it back."""
    conn.execute(insert(conn, secrets).values(name=name, value=value, created_at=now)
                 .on_conflict_do_nothing(index_elements=[secrets.c.name]))
    stored: str = conn.execute(sa.select(secrets.c.value)
                               .where(secrets.c.name == name)).scalar_one()
    return stored

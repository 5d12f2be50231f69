"""Small SQL helpers the operation modules share."""

from __future__ import annotations

from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from remote_core.records import DEFAULT_TENANT_ID, Keyset

__all__ = ["dialect_insert", "in_tenant", "insert", "keyset_page", "values_given"]

_Select = TypeVar("_Select", bound=sa.Select[Any])


def insert(conn: Connection, table: sa.Table) -> Any:
    """A dialect ``INSERT`` that offers ``on_conflict_do_update`` / ``_do_nothing``."""
    return dialect_insert(conn.dialect.name, table)


def dialect_insert(dialect: str, table: sa.Table) -> Any:
    """:func:`insert` for a dialect named, for statements built once and kept."""
    if dialect == "postgresql":
        return postgresql.insert(table)
    return sqlite.insert(table)


def in_tenant(column: sa.ColumnElement[Any], tenant_id: str) -> sa.ColumnElement[bool]:
    """Rows of ``tenant_id``: a row stored without a tenant (NULL, SPEC 1) is the default
    tenant's."""
    if tenant_id == DEFAULT_TENANT_ID:
        return sa.or_(column == tenant_id, column.is_(None))
    return column == tenant_id


def values_given(**values: Any) -> dict[str, Any]:
    """The keyword arguments that are not ``None`` ("not given; keep what is stored")."""
    return {name: value for name, value in values.items() if value is not None}


def keyset_page(query: _Select, created: sa.ColumnElement[Any], ident: sa.ColumnElement[Any],
                *, after: Keyset | None, limit: int | None, newest_first: bool) -> _Select:
    """``query`` ordered by creation time then id, resumed past ``after``, at most ``limit``
    rows (``None``: all): the store's one way to page a list (keyset, not offset)."""
    if newest_first:
        query = query.order_by(created.desc(), ident.desc())
    else:
        query = query.order_by(created, ident)
    if after is not None:
        past = ((created < after.created_at, ident < after.id) if newest_first
                else (created > after.created_at, ident > after.id))
        query = query.where(sa.or_(past[0], sa.and_(created == after.created_at, past[1])))
    if limit is not None:
        query = query.limit(max(limit, 0))
    return query

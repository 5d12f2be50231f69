"""Tenants: the customers one service keeps apart."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from remote_core.records import Tenant

from ._schema import tenants
from ._sql import values_given

__all__ = ["create_tenant", "get_tenant", "list_tenants", "update_tenant"]


def _from_row(row: Any) -> Tenant:
    m = row._mapping
    return Tenant(id=m["id"], name=m["name"], disabled=bool(m["disabled"]),
                  created_at=m["created_at"])


def create_tenant(conn: Connection, tenant: Tenant) -> Tenant:
    row = conn.execute(sa.insert(tenants).values(
        id=tenant.id, name=tenant.name, disabled=tenant.disabled,
        created_at=tenant.created_at).returning(*tenants.c)).one()
    return _from_row(row)


def get_tenant(conn: Connection, tenant_id: str) -> Tenant | None:
    row = conn.execute(sa.select(tenants).where(tenants.c.id == tenant_id)).first()
    return _from_row(row) if row else None


def list_tenants(conn: Connection) -> list[Tenant]:
    query = sa.select(tenants).order_by(tenants.c.created_at, tenants.c.id)
    return [_from_row(row) for row in conn.execute(query)]


def update_tenant(conn: Connection, tenant_id: str, name: str | None,
                  disabled: bool | None) -> Tenant | None:
    if changes := values_given(name=name, disabled=disabled):
        conn.execute(sa.update(tenants).where(tenants.c.id == tenant_id).values(changes))
    return get_tenant(conn, tenant_id)

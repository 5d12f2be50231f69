"""Small SQL helpers the operation modules share."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

__all__ = ["insert", "values_given"]


def insert(conn: Connection, table: sa.Table) -> Any:
    """A dialect ``INSERT`` that offers ``on_conflict_do_update`` / ``_do_nothing``."""
    if conn.dialect.name == "postgresql":
        return postgresql.insert(table)
    return sqlite.insert(table)


def values_given(**values: Any) -> dict[str, Any]:
    """The keyword arguments that are not ``None`` ("not given; keep what is stored")."""
    return {name: value for name, value in values.items() if value is not None}

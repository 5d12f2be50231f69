"""Built-in plugin ``store_sql``: SQLite and PostgreSQL storage on SQLAlchemy 2.

SQLAlchemy is imported by the factory, not here, so listing plugins stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from remote_core import hookimpl
from remote_core.types import StoreSpec

if TYPE_CHECKING:
    from remote_core.interfaces import Store, StoreAdmin

__all__ = ["make_admin", "make_store", "register_stores"]


def make_store(url: str) -> Store:
    """A :class:`~remote_store_sql.store.SqlStore` for ``url`` (not yet opened)."""
    from .store import SqlStore

    return SqlStore(url)


def make_admin(url: str) -> StoreAdmin:
    """A :class:`~remote_store_sql._admin.SqlAdmin` (backups, restores, copies) for ``url``."""
    from ._admin import SqlAdmin

    return SqlAdmin(url)


@hookimpl
def register_stores() -> list[StoreSpec]:
    return [StoreSpec(name="sql", schemes=("sqlite", "postgresql"), factory=make_store,
                      admin=make_admin)]

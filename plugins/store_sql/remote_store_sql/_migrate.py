"""Programmatic Alembic: upgrade to head inside one transaction under a cross-process lock.

Two servers opening one database at once must not both create tables: on
PostgreSQL the upgrade holds a transaction-scoped advisory lock, on SQLite the
transaction is ``BEGIN IMMEDIATE`` (see ``_engine``), which serialises writers.
The second opener then finds the schema at head and does nothing.
"""

from __future__ import annotations

import logging
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy.engine import Connection

from remote_core.errors import StoreError

__all__ = ["MIGRATIONS", "current_revision", "exclusive", "head_revision", "revisions",
           "upgrade"]

log = logging.getLogger(__name__)

MIGRATIONS = Path(__file__).resolve().parent / "migrations"

_LOCK_KEYS = {"migrate": 0x52535F4D4947, "first_admin": 0x52535F41444D,
              "signing_keys": 0x52535F4B4559}


def exclusive(conn: Connection, purpose: str) -> None:
    """Serialise this transaction against every other one taking the same lock."""
    if conn.dialect.name == "postgresql":
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"),
                     {"key": _LOCK_KEYS[purpose]})
    # SQLite: write transactions are BEGIN IMMEDIATE, already exclusive among writers.


def _config(conn: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("path_separator", "os")
    if conn is not None:
        config.attributes["connection"] = conn
    return config


def upgrade(conn: Connection, target: str = "head") -> None:
    """Apply pending migrations up to ``target`` (a no-op when already there)."""
    exclusive(conn, "migrate")
    before = current_revision(conn)
    try:
        command.upgrade(_config(conn), target)
    except CommandError as error:  # e.g. a schema written by a newer release
        raise StoreError(f"cannot migrate the database (at revision "
                         f"{current_revision(conn)!r}, this release knows up to "
                         f"{head_revision()!r}): {error}") from error
    after = current_revision(conn)
    if after != before:
        log.info("database schema migrated from %s to %s", before or "empty", after)


def current_revision(conn: Connection) -> str | None:
    return MigrationContext.configure(conn).get_current_revision()


def revisions() -> list[str]:
    """Every revision id, oldest first."""
    script = ScriptDirectory.from_config(_config())
    return [rev.revision for rev in reversed(list(script.walk_revisions()))]


def head_revision() -> str:
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None
    return head

"""Keyset paging: every list is ordered by creation time, then id.

Indexes for the lists that grow without bound (the audit log, support codes, machines),
and a creation time for any row that has none, so no row falls outside the order
(rows from the very start of time come first).

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

PAGED = ("machines", "agent_keys", "support_codes", "sessions", "users", "releases",
         "session_events")


def upgrade() -> None:
    op.create_index("ix_session_events_created_at_id", "session_events", ["created_at", "id"])
    op.create_index("ix_support_codes_created_at_code", "support_codes", ["created_at", "code"])
    op.create_index("ix_machines_created_at_agent_id", "machines", ["created_at", "agent_id"])
    postgres = op.get_bind().dialect.name == "postgresql"
    epoch = datetime(1970, 1, 1, tzinfo=UTC if postgres else None)
    for name in PAGED:
        created_at = sa.column("created_at", sa.DateTime(timezone=True))
        op.execute(sa.update(sa.table(name, created_at)).where(created_at.is_(None))
                   .values(created_at=epoch))

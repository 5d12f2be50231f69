"""Session recordings: one row per recording, its segments in a recording store.

``state`` is ``recording`` while it is written, then ``complete``, or ``incomplete``
with a ``reason`` (the store fell behind, the server stopped first). ``sha256`` is the
last link of the segments' hash chain (``remote_core.recording``), kept here apart from
the segments so that a changed segment shows. ``technicians``: a JSON array of the
usernames who watched while it ran.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "recordings",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("session_id", sa.String(36), nullable=False),
        sa.Column("agent_id", sa.String(128), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text, nullable=False, server_default=""),
        sa.Column("segments", sa.Integer, nullable=False, server_default="0"),
        sa.Column("bytes", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("sha256", sa.String(64), nullable=False, server_default=""),
        sa.Column("technicians", sa.Text, nullable=False, server_default="[]"),
        sa.Column("tenant_id", sa.String(36), sa.ForeignKey("tenants.id"), nullable=True),
    )
    op.create_index("ix_recordings_session_id", "recordings", ["session_id"])
    op.create_index("ix_recordings_agent_id_started_at", "recordings",
                    ["agent_id", "started_at"])
    op.create_index("ix_recordings_started_at_id", "recordings", ["started_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_recordings_started_at_id", table_name="recordings")
    op.drop_index("ix_recordings_agent_id_started_at", table_name="recordings")
    op.drop_index("ix_recordings_session_id", table_name="recordings")
    op.drop_table("recordings")

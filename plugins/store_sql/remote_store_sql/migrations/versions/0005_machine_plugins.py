"""Machines record the plugins their agent reports (``AgentStatus.plugins``).

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    listed = postgresql.ARRAY(sa.Text()) if postgres else sa.JSON()
    op.add_column("machines", sa.Column("plugins", listed, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("machines") as batch:
        batch.drop_column("plugins")

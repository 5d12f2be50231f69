"""Cluster nodes' beats: each node of a cluster writes, every third of its lease, that it
is alive and whether it reaches the bus. A node cut off from the bus reads them to tell
"the bus is down for everyone" (nothing to do) from "only I am cut off" (fenced: hand the
agents to the others), even when it holds no session the others could have closed.

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "cluster_nodes",
        sa.Column("node_id", sa.String(128), primary_key=True),
        sa.Column("on_bus", sa.Boolean, nullable=False),
        sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("cluster_nodes")

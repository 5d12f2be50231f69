"""Tenants become real: a tenant can be disabled, its name is unique, every scoped row
that was stored without a tenant (NULL, SPEC 1) moves into the seeded default tenant,
and the lists a tenant reads are indexed by tenant.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

DEFAULT_TENANT_ID = "00000000-0000-0000-0000-000000000001"
SCOPED = ("machines", "agent_keys", "support_codes", "sessions", "users", "user_permissions",
          "user_client_access", "releases", "session_events", "recordings")
LISTED = ("machines", "sessions", "support_codes", "users", "session_events", "recordings")


def upgrade() -> None:
    op.add_column("tenants", sa.Column("disabled", sa.Boolean, nullable=False,
                                       server_default=sa.false()))
    op.create_index("ix_tenants_name", "tenants", ["name"], unique=True)
    for name in SCOPED:
        rows = sa.table(name, sa.column("tenant_id"))
        op.execute(rows.update().where(rows.c.tenant_id.is_(None))
                   .values(tenant_id=DEFAULT_TENANT_ID))
    for name in LISTED:
        op.create_index(f"ix_{name}_tenant_id", name, ["tenant_id"])


def downgrade() -> None:
    for table in LISTED:
        op.drop_index(f"ix_{table}_tenant_id", table)
    op.drop_index("ix_tenants_name", "tenants")
    with op.batch_alter_table("tenants") as batch:
        batch.drop_column("disabled")

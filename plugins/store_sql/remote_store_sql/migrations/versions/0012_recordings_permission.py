"""The ``recordings`` permission (watching session recordings): administrators hold every
permission, so each existing administrator gets its row, as a new one would at creation.
Technicians get it only when an administrator grants it.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "INSERT INTO user_permissions (user_id, permission, tenant_id) "
        "SELECT u.id, 'recordings', u.tenant_id FROM users u WHERE u.role = 'admin' "
        "AND NOT EXISTS (SELECT 1 FROM user_permissions p WHERE p.user_id = u.id "
        "AND p.permission = 'recordings')")


def downgrade() -> None:
    op.execute("DELETE FROM user_permissions WHERE permission = 'recordings'")

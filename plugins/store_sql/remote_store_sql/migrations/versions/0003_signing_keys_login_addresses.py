"""The token-signing key ring, and the addresses each user has logged in from.

``signing_keys``: one row per key; the current one has no ``verify_until``,
a rotated-out one verifies tokens until then (T17). ``login_addresses``: the
newest few client addresses of each user's successful logins, which may still
try a password while the account's failed-login guard is up (T06).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "signing_keys",
        sa.Column("kid", sa.String(64), primary_key=True),
        sa.Column("secret", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("verify_until", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_table(
        "login_addresses",
        sa.Column("user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("client_ip", sa.String(64), primary_key=True),
        sa.Column("last_login_at", sa.DateTime(timezone=True), nullable=False),
    )

"""Second factors and token generations.

``user_factors``: one row per user with a TOTP secret and the generation their
tokens must carry (logout, second-factor reset and the like raise it, voiding
every older token at once), and the last TOTP time step used (a code works once).
``recovery_codes``: the Argon2id hashes of a
user's unused recovery codes; one is deleted when it is used. ``login_sessions``: one
row per login (its token's ``jti``), which the user lists and ends.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "user_factors",
        sa.Column("user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("totp_secret", sa.Text, nullable=True),
        sa.Column("token_generation", sa.Integer, nullable=False, server_default="0"),
        sa.Column("totp_last_step", sa.BigInteger, nullable=True),
    )
    op.create_table(
        "recovery_codes",
        sa.Column("user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("code_hash", sa.String(255), primary_key=True),
    )
    op.create_table(
        "login_sessions",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("client_ip", sa.String(64), nullable=False, server_default=""),
        sa.Column("user_agent", sa.String(256), nullable=False, server_default=""),
        sa.Column("methods", sa.String(64), nullable=False, server_default="pwd"),
    )
    op.create_index("ix_login_sessions_user", "login_sessions", ["user_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_login_sessions_user", table_name="login_sessions")
    op.drop_table("login_sessions")
    op.drop_table("recovery_codes")
    op.drop_table("user_factors")

"""Second factors and token generations.

``user_factors``: one row per user with a TOTP secret and the generation their
tokens must carry (logout, second-factor reset and the like raise it, voiding
every older token at once), and the last TOTP time step used (a code works once).
``recovery_codes``: the Argon2id hashes of a
user's unused recovery codes; one is deleted when it is used.

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


def downgrade() -> None:
    op.drop_table("recovery_codes")
    op.drop_table("user_factors")

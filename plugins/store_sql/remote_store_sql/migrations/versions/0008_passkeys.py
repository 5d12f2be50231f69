"""Passkeys (WebAuthn) as a second factor.

``passkeys``: one row per registered credential of a user: its credential id
(base64url, unique), COSE public key, the signature counter last seen, a name the
user gave it and when it was last used. ``webauthn_challenges``: the challenges
handed to browsers, each bound to one user and one ceremony (``register`` or
``login``), deleted when used or past ``expires_at``; kept here rather than in
process memory so that a login started on one node finishes on another.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "passkeys",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("credential_id", sa.String(1400), nullable=False),
        sa.Column("public_key", sa.LargeBinary, nullable=False),
        sa.Column("sign_count", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("name", sa.String(64), nullable=False, server_default=""),
        sa.Column("transports", sa.String(128), nullable=False, server_default=""),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.UniqueConstraint("credential_id", name="passkeys_credential_id_key"),
    )
    op.create_index("ix_passkeys_user", "passkeys", ["user_id", "created_at"])
    op.create_table(
        "webauthn_challenges",
        sa.Column("challenge", sa.String(128), primary_key=True),
        sa.Column("user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("purpose", sa.String(16), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_webauthn_challenges_user", "webauthn_challenges",
                    ["user_id", "expires_at"])


def downgrade() -> None:
    op.drop_index("ix_webauthn_challenges_user", table_name="webauthn_challenges")
    op.drop_table("webauthn_challenges")
    op.drop_index("ix_passkeys_user", table_name="passkeys")
    op.drop_table("passkeys")

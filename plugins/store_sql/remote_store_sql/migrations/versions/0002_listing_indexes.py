"""Indexes for the newest-first listings: all sessions, and one technician's codes.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_sessions_created_at", "sessions", ["created_at"])
    op.create_index("ix_support_codes_created_by_created_at", "support_codes",
                    ["created_by", "created_at"])

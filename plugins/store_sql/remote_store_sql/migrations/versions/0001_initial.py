"""Initial schema: every record of SPEC 2.4 and the seeded default tenant.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

DEFAULT_TENANT_ID = "00000000-0000-0000-0000-000000000001"


def _time(name: str, nullable: bool = True) -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _tenant() -> sa.Column:  # type: ignore[type-arg]
    return sa.Column("tenant_id", sa.String(36), sa.ForeignKey("tenants.id"), nullable=True)


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    tags = postgresql.ARRAY(sa.Text()) if postgres else sa.JSON()
    empty_tags = sa.text("'{}'::text[]") if postgres else sa.text("'[]'")
    detail = postgresql.JSONB() if postgres else sa.JSON()

    tenants = op.create_table(
        "tenants",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("name", sa.Text, nullable=False),
        _time("created_at"),
    )
    op.bulk_insert(tenants, [{"id": DEFAULT_TENANT_ID, "name": "default",
                              "created_at": datetime.now(UTC)}])

    op.create_table(
        "machines",
        sa.Column("agent_id", sa.String(128), primary_key=True),
        sa.Column("machine_uid", sa.String(256), nullable=True),
        sa.Column("hostname", sa.Text, nullable=True),
        sa.Column("os_version", sa.Text, nullable=True),
        sa.Column("organization", sa.Text, nullable=True),
        sa.Column("site", sa.Text, nullable=True),
        sa.Column("tags", tags, nullable=False, server_default=empty_tags),
        sa.Column("is_elevated", sa.Boolean, nullable=True),
        sa.Column("is_persistent", sa.Boolean, nullable=True),
        sa.Column("status", sa.String(16), nullable=True),
        sa.Column("agent_version", sa.Text, nullable=True),
        _time("last_seen"),
        _time("created_at"),
        _time("updated_at"),
        _time("deleted_at"),
        _tenant(),
        sa.UniqueConstraint("machine_uid", name="machines_machine_uid_key"),
    )
    op.create_index("ix_machines_organization", "machines", ["organization"])

    op.create_table(
        "agent_keys",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("agent_id", sa.String(128),
                  sa.ForeignKey("machines.agent_id", ondelete="CASCADE"), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.Column("label", sa.Text, nullable=True),
        _time("created_at"),
        _time("last_used_at"),
        _time("revoked_at"),
        _tenant(),
        sa.UniqueConstraint("key_hash", name="agent_keys_key_hash_key"),
    )
    op.create_index("ix_agent_keys_agent_id", "agent_keys", ["agent_id"])

    op.create_table(
        "support_codes",
        sa.Column("code", sa.String(11), primary_key=True),
        sa.Column("created_by", sa.String(36), nullable=True),
        sa.Column("technician_name", sa.Text, nullable=True),
        _time("expires_at", nullable=False),
        _time("created_at"),
        _time("consumed_at"),
        _time("cancelled_at"),
        sa.Column("agent_id", sa.String(128), nullable=True),
        sa.Column("session_id", sa.String(36), nullable=True),
        _tenant(),
    )

    op.create_table(
        "sessions",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("agent_id", sa.String(128), nullable=False),
        sa.Column("is_managed", sa.Boolean, nullable=True),
        sa.Column("source", sa.Text, nullable=True),
        sa.Column("consent_state", sa.String(32), nullable=True),
        sa.Column("technician", sa.Text, nullable=True),
        sa.Column("session_type", sa.Integer, nullable=True),
        _time("created_at"),
        _time("ended_at"),
        sa.Column("end_reason", sa.Text, nullable=True),
        _time("deleted_at"),
        _tenant(),
    )
    op.create_index("ix_sessions_agent_id_created_at", "sessions", ["agent_id", "created_at"])

    op.create_table(
        "users",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("username", sa.String(150), nullable=False),
        sa.Column("password_hash", sa.Text, nullable=False),
        sa.Column("role", sa.String(16), nullable=True),
        sa.Column("disabled", sa.Boolean, nullable=True),
        _time("created_at"),
        _tenant(),
        sa.UniqueConstraint("username", name="users_username_key"),
    )
    for name, column, width in (("user_permissions", "permission", 32),
                                ("user_client_access", "organization", 256)):
        op.create_table(
            name,
            sa.Column("user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"),
                      primary_key=True),
            sa.Column(column, sa.String(width), primary_key=True),
            _tenant(),
        )

    op.create_table(
        "releases",
        sa.Column("version", sa.String(64), primary_key=True),
        sa.Column("download_url", sa.Text, nullable=False),
        sa.Column("checksum_sha256", sa.String(64), nullable=False),
        sa.Column("mandatory", sa.Boolean, nullable=True),
        sa.Column("notes", sa.Text, nullable=True),
        _time("created_at"),
        _tenant(),
    )

    op.create_table(
        "session_events",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True,
                  autoincrement=True),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("session_id", sa.String(36), nullable=True),
        sa.Column("agent_id", sa.String(128), nullable=True),
        sa.Column("actor", sa.Text, nullable=True),
        sa.Column("target", sa.Text, nullable=True),
        sa.Column("client_ip", sa.String(64), nullable=True),
        sa.Column("detail", detail, nullable=True),
        _time("created_at"),
        _tenant(),
    )
    op.create_index("ix_session_events_session_id", "session_events", ["session_id"])
    op.create_index("ix_session_events_agent_id", "session_events", ["agent_id"])

    op.create_table(
        "secrets",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
        _time("created_at"),
    )

"""The tables, as SQLAlchemy Core metadata: the shape migrations must produce.

Migrations under ``migrations/versions`` create the schema; this module
describes the head revision for queries, and a test holds the two equal.
Every scoped table has a nullable ``tenant_id`` (SPEC 1).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Dialect

__all__ = [
    "DEFAULT_TENANT_NAME",
    "Tags",
    "UTCDateTime",
    "agent_keys",
    "cluster_nodes",
    "login_addresses",
    "login_sessions",
    "machines",
    "metadata",
    "passkeys",
    "recordings",
    "recovery_codes",
    "releases",
    "secrets",
    "session_events",
    "sessions",
    "signing_keys",
    "support_codes",
    "tenants",
    "user_client_access",
    "user_factors",
    "user_permissions",
    "users",
    "webauthn_challenges",
    "webhook_deliveries",
]

DEFAULT_TENANT_NAME = "default"


class UTCDateTime(sa.TypeDecorator[datetime]):
    """Timezone-aware UTC in Python on every backend (SQLite stores naive UTC text)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: records use timezone-aware UTC")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def Tags() -> sa.types.TypeEngine[Any]:
    """A list of text: a native ``text[]`` on PostgreSQL, JSON on SQLite."""
    return sa.JSON().with_variant(postgresql.ARRAY(sa.Text()), "postgresql")


def Detail() -> sa.types.TypeEngine[Any]:
    """A JSON object: ``jsonb`` on PostgreSQL."""
    return sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _tenant() -> sa.Column[Any]:
    return sa.Column("tenant_id", sa.String(36), sa.ForeignKey("tenants.id"), nullable=True)


metadata = sa.MetaData()

tenants = sa.Table(
    "tenants", metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=True),
    sa.Column("disabled", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Index("ix_tenants_name", "name", unique=True),
)

machines = sa.Table(
    "machines", metadata,
    sa.Column("agent_id", sa.String(128), primary_key=True),
    sa.Column("machine_uid", sa.String(256), nullable=True, unique=True),
    sa.Column("hostname", sa.Text, nullable=True),
    sa.Column("os_version", sa.Text, nullable=True),
    sa.Column("organization", sa.Text, nullable=True),
    sa.Column("site", sa.Text, nullable=True),
    sa.Column("tags", Tags(), nullable=False),
    sa.Column("is_elevated", sa.Boolean, nullable=True),
    sa.Column("is_persistent", sa.Boolean, nullable=True),
    sa.Column("status", sa.String(16), nullable=True),
    sa.Column("agent_version", sa.Text, nullable=True),
    sa.Column("plugins", Tags(), nullable=True),
    sa.Column("last_seen", UTCDateTime, nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=True),
    sa.Column("updated_at", UTCDateTime, nullable=True),
    sa.Column("deleted_at", UTCDateTime, nullable=True),
    _tenant(),
    sa.Index("ix_machines_organization", "organization"),
    sa.Index("ix_machines_created_at_agent_id", "created_at", "agent_id"),
    sa.Index("ix_machines_tenant_id", "tenant_id"),
)

agent_keys = sa.Table(
    "agent_keys", metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("agent_id", sa.String(128),
              sa.ForeignKey("machines.agent_id", ondelete="CASCADE"), nullable=False),
    sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("label", sa.Text, nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=True),
    sa.Column("last_used_at", UTCDateTime, nullable=True),
    sa.Column("revoked_at", UTCDateTime, nullable=True),
    _tenant(),
    sa.Index("ix_agent_keys_agent_id", "agent_id"),
)

support_codes = sa.Table(
    "support_codes", metadata,
    sa.Column("code", sa.String(11), primary_key=True),
    sa.Column("created_by", sa.String(36), nullable=True),
    sa.Column("technician_name", sa.Text, nullable=True),
    sa.Column("expires_at", UTCDateTime, nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=True),
    sa.Column("consumed_at", UTCDateTime, nullable=True),
    sa.Column("cancelled_at", UTCDateTime, nullable=True),
    sa.Column("agent_id", sa.String(128), nullable=True),
    sa.Column("session_id", sa.String(36), nullable=True),
    _tenant(),
    sa.Index("ix_support_codes_created_by_created_at", "created_by", "created_at"),
    sa.Index("ix_support_codes_created_at_code", "created_at", "code"),
    sa.Index("ix_support_codes_tenant_id", "tenant_id"),
)

sessions = sa.Table(
    "sessions", metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("agent_id", sa.String(128), nullable=False),
    sa.Column("is_managed", sa.Boolean, nullable=True),
    sa.Column("source", sa.Text, nullable=True),
    sa.Column("consent_state", sa.String(32), nullable=True),
    sa.Column("technician", sa.Text, nullable=True),
    sa.Column("session_type", sa.Integer, nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=True),
    sa.Column("ended_at", UTCDateTime, nullable=True),
    sa.Column("end_reason", sa.Text, nullable=True),
    sa.Column("deleted_at", UTCDateTime, nullable=True),
    _tenant(),
    sa.Index("ix_sessions_agent_id_created_at", "agent_id", "created_at"),
    sa.Index("ix_sessions_created_at", "created_at"),
    sa.Index("ix_sessions_tenant_id", "tenant_id"),
)

users = sa.Table(
    "users", metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("username", sa.String(150), nullable=False, unique=True),
    sa.Column("password_hash", sa.Text, nullable=False),
    sa.Column("role", sa.String(16), nullable=True),
    sa.Column("disabled", sa.Boolean, nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=True),
    _tenant(),
    sa.Index("ix_users_tenant_id", "tenant_id"),
)

user_permissions = sa.Table(
    "user_permissions", metadata,
    sa.Column("user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("permission", sa.String(32), primary_key=True),
    _tenant(),
)

user_client_access = sa.Table(
    "user_client_access", metadata,
    sa.Column("user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("organization", sa.String(256), primary_key=True),
    _tenant(),
)

releases = sa.Table(
    "releases", metadata,
    sa.Column("version", sa.String(64), primary_key=True),
    sa.Column("download_url", sa.Text, nullable=False),
    sa.Column("checksum_sha256", sa.String(64), nullable=False),
    sa.Column("mandatory", sa.Boolean, nullable=True),
    sa.Column("notes", sa.Text, nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=True),
    _tenant(),
)

session_events = sa.Table(
    "session_events", metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True,
              autoincrement=True),
    sa.Column("kind", sa.String(64), nullable=False),
    sa.Column("session_id", sa.String(36), nullable=True),
    sa.Column("agent_id", sa.String(128), nullable=True),
    sa.Column("actor", sa.Text, nullable=True),
    sa.Column("target", sa.Text, nullable=True),
    sa.Column("client_ip", sa.String(64), nullable=True),
    sa.Column("detail", Detail(), nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=True),
    _tenant(),
    sa.Index("ix_session_events_session_id", "session_id"),
    sa.Index("ix_session_events_agent_id", "agent_id"),
    sa.Index("ix_session_events_created_at_id", "created_at", "id"),
    sa.Index("ix_session_events_tenant_id", "tenant_id"),
)

secrets = sa.Table(
    "secrets", metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=True),
)

signing_keys = sa.Table(
    "signing_keys", metadata,
    sa.Column("kid", sa.String(64), primary_key=True),
    sa.Column("secret", sa.Text, nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("verify_until", UTCDateTime, nullable=True),
)

login_addresses = sa.Table(
    "login_addresses", metadata,
    sa.Column("user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("client_ip", sa.String(64), primary_key=True),
    sa.Column("last_login_at", UTCDateTime, nullable=False),
)

user_factors = sa.Table(
    "user_factors", metadata,
    sa.Column("user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("totp_secret", sa.Text, nullable=True),
    sa.Column("token_generation", sa.Integer, nullable=False, server_default="0"),
    sa.Column("totp_last_step", sa.BigInteger, nullable=True),
)

login_sessions = sa.Table(
    "login_sessions", metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"),
              nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("expires_at", UTCDateTime, nullable=False),
    sa.Column("client_ip", sa.String(64), nullable=False, server_default=""),
    sa.Column("user_agent", sa.String(256), nullable=False, server_default=""),
    sa.Column("methods", sa.String(64), nullable=False, server_default="pwd"),
    sa.Index("ix_login_sessions_user", "user_id", "created_at"),
)

recovery_codes = sa.Table(
    "recovery_codes", metadata,
    sa.Column("user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("code_hash", sa.String(255), primary_key=True),
)

passkeys = sa.Table(
    "passkeys", metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"),
              nullable=False),
    sa.Column("credential_id", sa.String(1400), nullable=False, unique=True),
    sa.Column("public_key", sa.LargeBinary, nullable=False),
    sa.Column("sign_count", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("name", sa.String(64), nullable=False, server_default=""),
    sa.Column("transports", sa.String(128), nullable=False, server_default=""),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("last_used_at", UTCDateTime, nullable=True),
    sa.Index("ix_passkeys_user", "user_id", "created_at"),
)

webauthn_challenges = sa.Table(
    "webauthn_challenges", metadata,
    sa.Column("challenge", sa.String(128), primary_key=True),
    sa.Column("user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"),
              nullable=False),
    sa.Column("purpose", sa.String(16), nullable=False),
    sa.Column("expires_at", UTCDateTime, nullable=False),
    sa.Index("ix_webauthn_challenges_user", "user_id", "expires_at"),
)

webhook_deliveries = sa.Table(
    "webhook_deliveries", metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True,
              autoincrement=True),
    sa.Column("delivery_id", sa.String(36), nullable=False),
    sa.Column("target", sa.String(64), nullable=False),
    sa.Column("url", sa.Text, nullable=False),
    sa.Column("event", sa.String(64), nullable=False),
    sa.Column("attempt", sa.Integer, nullable=False),
    sa.Column("outcome", sa.String(16), nullable=False),
    sa.Column("status_code", sa.Integer, nullable=True),
    sa.Column("error", sa.Text, nullable=False, server_default=""),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Index("ix_webhook_deliveries_created_at_id", "created_at", "id"),
)

recordings = sa.Table(
    "recordings", metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("session_id", sa.String(36), nullable=False),
    sa.Column("agent_id", sa.String(128), nullable=False),
    sa.Column("started_at", UTCDateTime, nullable=False),
    sa.Column("ended_at", UTCDateTime, nullable=True),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("reason", sa.Text, nullable=False, server_default=""),
    sa.Column("segments", sa.Integer, nullable=False, server_default="0"),
    sa.Column("bytes", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("sha256", sa.String(64), nullable=False, server_default=""),
    sa.Column("technicians", sa.Text, nullable=False, server_default="[]"),
    _tenant(),
    sa.Index("ix_recordings_session_id", "session_id"),
    sa.Index("ix_recordings_agent_id_started_at", "agent_id", "started_at"),
    sa.Index("ix_recordings_started_at_id", "started_at", "id"),
    sa.Index("ix_recordings_tenant_id", "tenant_id"),
)

cluster_nodes = sa.Table(
    "cluster_nodes", metadata,
    sa.Column("node_id", sa.String(128), primary_key=True),
    sa.Column("on_bus", sa.Boolean, nullable=False),
    sa.Column("seen_at", UTCDateTime, nullable=False),
)

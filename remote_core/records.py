"""Durable records exchanged between the core and a storage plugin.

Plain dataclasses, so neither side depends on the other's library. Times are
timezone-aware UTC datetimes. ``tenant_id`` is nullable everywhere (SPEC 1);
:data:`DEFAULT_TENANT_ID` is the seeded tenant used wherever one is needed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

__all__ = [
    "CONSENT_GRANTED",
    "CONSENT_NOT_REQUIRED",
    "CONSENT_PENDING",
    "DEFAULT_TENANT_ID",
    "PERMISSIONS",
    "AgentKey",
    "AuditEvent",
    "Keyset",
    "Machine",
    "MachineFilter",
    "MachineReport",
    "Passkey",
    "RecordingRecord",
    "Release",
    "RestoreResult",
    "SessionRecord",
    "SigningKey",
    "SupportCode",
    "Tenant",
    "User",
    "UserRole",
    "WebAuthnChallenge",
    "WebhookDelivery",
    "tenant_of",
    "utcnow",
]

DEFAULT_TENANT_ID = "00000000-0000-0000-0000-000000000001"
"""The seeded default tenant (SPEC 2.4); a constant, the same in every deployment."""

CONSENT_PENDING = "pending"
CONSENT_GRANTED = "granted"
CONSENT_NOT_REQUIRED = "not_required"

PERMISSIONS = ("view", "control", "support_codes", "manage_machines", "backstage",
               "file_transfer", "recordings")
"""Every permission a user can hold (CONTRACT 2; ``backstage``: BACKSTAGE terminals;
``file_transfer``: FILE_TRANSFER sessions; ``recordings``: watching session recordings)."""

UserRole = Literal["admin", "technician"]
"""An operator account's role (the protocol's peers have ``remote_core.protocol.Role``)."""


def tenant_of(tenant_id: str | None) -> str:
    """A row's tenant: one stored without (NULL, SPEC 1) is the default tenant's."""
    return tenant_id or DEFAULT_TENANT_ID


def utcnow() -> datetime:
    """The current time, timezone-aware UTC (the only clock records use)."""
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Tenant:
    """A customer of the service: its users, machines and everything they touch are its
    own. A disabled tenant's users cannot log in and its agents cannot connect."""

    id: str
    name: str
    disabled: bool = False
    created_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Machine:
    """A managed or attended machine (SPEC 2.4). Nullable columns read back as defaults."""

    agent_id: str
    machine_uid: str | None = None
    hostname: str = ""
    os_version: str = ""
    organization: str = ""
    site: str = ""
    tags: tuple[str, ...] = ()
    is_elevated: bool = False
    is_persistent: bool = False
    status: str = "offline"
    agent_version: str = ""
    plugins: tuple[str, ...] = ()  # "name version", as the agent last reported them
    last_seen: datetime | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    deleted_at: datetime | None = None
    tenant_id: str | None = DEFAULT_TENANT_ID


@dataclass(frozen=True, slots=True)
class MachineReport:
    """What an agent says about itself at registration or in ``AgentStatus``.

    ``None`` means "not reported; keep what is stored".
    """

    agent_id: str
    machine_uid: str | None = None
    hostname: str | None = None
    os_version: str | None = None
    organization: str | None = None
    site: str | None = None
    tags: tuple[str, ...] | None = None
    is_elevated: bool | None = None
    is_persistent: bool | None = None
    status: str | None = None
    agent_version: str | None = None
    plugins: tuple[str, ...] | None = None
    tenant_id: str | None = None
    """The tenant of a machine this report registers (default: the default tenant); a
    registered machine keeps its own."""


@dataclass(frozen=True, slots=True)
class Keyset:
    """A place in a list ordered by creation time, then id: the list resumes just past the
    item created at ``created_at`` whose id is ``id``.

    Keyset paging (not an offset): rows inserted or removed meanwhile neither repeat an
    item on a later page nor skip one. Ids are strings, but for audit events (integers).
    """

    created_at: datetime
    id: str | int


@dataclass(frozen=True, slots=True)
class MachineFilter:
    """Filters for listing machines; every field narrows, ``None`` means any.

    ``organizations`` is a technician's client access: ``None`` or a list holding
    ``"*"`` means all organizations. ``after`` and ``limit`` page the list (oldest first).
    """

    organization: str | None = None
    site: str | None = None
    tag: str | None = None
    status: str | None = None
    text: str | None = None
    organizations: tuple[str, ...] | None = None
    tenant_id: str | None = None
    limit: int | None = None
    after: Keyset | None = None


@dataclass(frozen=True, slots=True)
class RestoreResult:
    """Start-up restore (SPEC 5.2): every live machine, and which of them are keyed.

    Keyed machines must not be indexed by ``machine_uid``.
    """

    machines: tuple[Machine, ...]
    keyed_agent_ids: frozenset[str]


@dataclass(frozen=True, slots=True)
class AgentKey:
    """A per-agent key. Only the SHA-256 hex digest of the plain key is ever stored."""

    id: str
    agent_id: str
    key_hash: str
    label: str = ""
    created_at: datetime | None = None
    last_used_at: datetime | None = None
    revoked_at: datetime | None = None
    tenant_id: str | None = DEFAULT_TENANT_ID


@dataclass(frozen=True, slots=True)
class SupportCode:
    """A one-time support code ``XXX-XXX-XXX`` (SPEC 3.2, 8)."""

    code: str
    created_by: str | None
    technician_name: str
    expires_at: datetime
    created_at: datetime | None = None
    consumed_at: datetime | None = None
    cancelled_at: datetime | None = None
    agent_id: str | None = None
    session_id: str | None = None
    tenant_id: str | None = DEFAULT_TENANT_ID


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """A session row (SPEC 2.4). ``source`` is the auth method that opened it."""

    id: str
    agent_id: str
    is_managed: bool
    source: str
    consent_state: str
    technician: str | None = None
    session_type: int = 0
    created_at: datetime | None = None
    ended_at: datetime | None = None
    end_reason: str | None = None
    deleted_at: datetime | None = None
    tenant_id: str | None = DEFAULT_TENANT_ID


@dataclass(frozen=True, slots=True)
class User:
    """An operator account. ``client_access`` holds organizations, ``("*",)`` for all."""

    id: str
    username: str
    password_hash: str
    role: UserRole = "technician"
    permissions: tuple[str, ...] = ()
    client_access: tuple[str, ...] = ()
    disabled: bool = False
    created_at: datetime | None = None
    tenant_id: str | None = DEFAULT_TENANT_ID

    @property
    def is_admin(self) -> bool:
        """An administrator of the user's own tenant."""
        return self.role == "admin"

    @property
    def is_global_admin(self) -> bool:
        """An administrator of the default tenant: they also manage the tenants."""
        return self.is_admin and tenant_of(self.tenant_id) == DEFAULT_TENANT_ID

    @property
    def password_fingerprint(self) -> str:
        """A short fingerprint of the password hash, carried by tokens: a password change
        voids every token minted before it (login tokens and viewer tokens alike)."""
        return hashlib.sha256(self.password_hash.encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class SigningKey:
    """One key of the token-signing ring (T17): the current key has no ``verify_until``;
    a rotated-out key still verifies tokens until then, and signs none."""

    kid: str
    secret: str = field(repr=False)
    created_at: datetime
    verify_until: datetime | None = None


@dataclass(frozen=True, slots=True)
class SecondFactors:
    """A user's second factor and token generation.

    ``totp_secret`` is the base32 TOTP secret (None when none is enrolled);
    ``recovery_hashes`` the Argon2id hashes of the unused recovery codes;
    ``token_generation`` rises on logout, second-factor reset and the like, and a
    token minted under an older generation stops working at once.
    """

    user_id: str
    totp_secret: str | None = field(default=None, repr=False)
    recovery_hashes: tuple[str, ...] = field(default=(), repr=False)
    token_generation: int = 0


@dataclass(frozen=True, slots=True)
class LoginSession:
    """One login of a user: its login token's ``jti``. The token works while the row is
    there; the user lists their rows and ends any (or all, with logout)."""

    id: str
    user_id: str
    created_at: datetime
    expires_at: datetime
    client_ip: str = ""
    user_agent: str = ""
    methods: tuple[str, ...] = ("pwd",)


@dataclass(frozen=True, slots=True)
class Passkey:
    """A user's WebAuthn credential (a passkey or security key), a second factor.

    ``credential_id`` is the authenticator's credential id, base64url without padding;
    ``public_key`` its COSE public key; ``sign_count`` the signature counter the
    authenticator last reported (a later assertion must report more, unless both are 0).
    """

    id: str
    user_id: str
    credential_id: str
    public_key: bytes = field(repr=False)
    sign_count: int = 0
    name: str = ""
    created_at: datetime = field(default_factory=lambda: utcnow())
    transports: tuple[str, ...] = ()
    last_used_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class WebAuthnChallenge:
    """A challenge handed to a browser for one WebAuthn ceremony: bound to one user and
    one ``purpose`` (``register`` or ``login``), usable once, until ``expires_at``."""

    challenge: str
    """base64url without padding, as it comes back in the client data."""
    user_id: str
    purpose: str
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class Release:
    """An available agent version (SPEC 2.4, CONTRACT 2)."""

    version: str
    download_url: str
    checksum_sha256: str
    mandatory: bool = False
    notes: str = ""
    created_at: datetime | None = None
    tenant_id: str | None = DEFAULT_TENANT_ID


@dataclass(frozen=True, slots=True)
class AuditEvent:
    """One audit-log entry: a session or viewer event, or an operator action."""

    kind: str
    session_id: str | None = None
    agent_id: str | None = None
    actor: str | None = None
    target: str | None = None
    client_ip: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None
    id: int | None = None
    tenant_id: str | None = None
    """``None`` when recorded: the audit log gives it the tenant of its machine (else the
    default tenant's); read back, every event has one."""


@dataclass(frozen=True, slots=True)
class RecordingRecord:
    """A session recording's row; its segments are in the recording store.

    ``state`` is ``recording`` while it is written, then ``complete``, or ``incomplete``
    with a ``reason``. ``sha256`` is the last link of the segments' hash chain
    (:mod:`remote_core.recording`), ``segments`` and ``bytes`` what was written;
    ``technicians`` who watched while it ran (usernames, in the order they came).
    """

    id: str
    session_id: str
    agent_id: str
    started_at: datetime
    state: str = "recording"
    ended_at: datetime | None = None
    reason: str = ""
    segments: int = 0
    bytes: int = 0
    sha256: str = ""
    technicians: tuple[str, ...] = ()
    tenant_id: str | None = DEFAULT_TENANT_ID


@dataclass(frozen=True, slots=True)
class WebhookDelivery:
    """One attempt to deliver one event to one webhook target, for the delivery log.

    Every attempt of one delivery shares ``delivery_id`` (also sent to the receiver,
    so it can drop a repeat). ``outcome`` is ``delivered``, ``retrying`` (this attempt
    failed and another follows), ``failed`` (the last attempt failed) or ``refused``
    (the target's address or scheme is not allowed; nothing was sent).
    """

    delivery_id: str
    target: str
    url: str
    event: str
    attempt: int
    outcome: str
    status_code: int | None = None
    error: str = ""
    created_at: datetime | None = None
    id: int | None = None

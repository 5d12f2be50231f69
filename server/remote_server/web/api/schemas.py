"""Request and response bodies of the HTTP API (CONTRACT 2), as pydantic models.

Request bodies forbid unknown fields and coerce nothing (``strict``; an enum field
takes its values as strings), so a wrong type or a stray field is a 422 naming it.
Response models are what the handlers render and what the OpenAPI document publishes,
as the server sends them: every field present (``required``), ``null`` only where it
can be. Every enum is a named class, so the document shares one schema for each.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, RootModel, Strict

from remote_core.semver import SEMVER_PATTERN
from remote_core.textrules import MAX_TAGS, MAX_TEXT, printable

from ..problem_types import PROBLEM_TYPES


class Role(StrEnum):
    """An operator account's role."""

    ADMIN = "admin"
    TECHNICIAN = "technician"


class Permission(StrEnum):
    """What a technician may do besides seeing machines (administrators may do all)."""

    VIEW = "view"
    CONTROL = "control"
    SUPPORT_CODES = "support_codes"
    MANAGE_MACHINES = "manage_machines"
    BACKSTAGE = "backstage"
    FILE_TRANSFER = "file_transfer"
    RECORDINGS = "recordings"


class MachineStatus(StrEnum):
    """Whether the machine's agent is connected right now."""

    ONLINE = "online"
    OFFLINE = "offline"


class CodeStatus(StrEnum):
    """Where a support code stands: usable, used by an agent, cancelled or expired."""

    PENDING = "pending"
    CONNECTED = "connected"
    CANCELLED = "cancelled"
    EXPIRED = "expired"


class ConsentState(StrEnum):
    """The end user's consent to a session (SPEC 3.1): managed sessions need none."""

    PENDING = "pending"
    GRANTED = "granted"
    NOT_REQUIRED = "not_required"


class SessionType(StrEnum):
    """The protocol's ``SessionType``, by name (SPEC 2.2)."""

    SCREEN_CONTROL = "screen_control"
    VIEW_ONLY = "view_only"
    BACKSTAGE = "backstage"
    FILE_TRANSFER = "file_transfer"


class SessionSource(StrEnum):
    """The built-in authentication methods that open sessions; a session opened through
    a third-party method carries that method's name instead."""

    AGENTKEY = "agentkey"
    SUPPORTCODE = "supportcode"
    SHAREDKEY = "sharedkey"


class EventKind(StrEnum):
    """The kinds of audit event this server records; a newer server may add kinds, so
    a client should expect other strings too."""

    AGENT_AUTH_FAILED = "agent.auth_failed"
    AGENT_UPDATE_STATUS = "agent.update_status"
    AGENT_KEY_ISSUED = "agent_key.issued"
    AGENT_KEY_REVOKED = "agent_key.revoked"
    AUTH_ACCOUNT_GUARDED = "auth.account_guarded"
    AUTH_ACCOUNT_UNLOCKED = "auth.account_unlocked"
    AUTH_CHANGE_PASSWORD_FAILED = "auth.change_password_failed"  # noqa: S105 - a kind
    AUTH_LOGIN = "auth.login"
    AUTH_LOGIN_ENDED = "auth.login_ended"
    AUTH_LOGIN_FAILED = "auth.login_failed"
    AUTH_PASSKEY_ADDED = "auth.passkey_added"
    AUTH_PASSKEY_REMOVED = "auth.passkey_removed"
    AUTH_PASSWORD_CHANGED = "auth.password_changed"  # noqa: S105 - a kind
    AUTH_RECOVERY_CODE_USED = "auth.recovery_code_used"
    AUTH_SIGNING_KEY_ROTATED = "auth.signing_key_rotated"
    AUTH_TOKENS_REVOKED = "auth.tokens_revoked"
    AUTH_TOTP_ENROLLED = "auth.totp_enrolled"
    AUTH_TOTP_RESET = "auth.totp_reset"
    BACKSTAGE_CLOSED = "backstage.closed"
    BACKSTAGE_OPENED = "backstage.opened"
    FILE_DOWNLOADED = "file.downloaded"
    FILE_FAILED = "file.failed"
    FILE_FOLDER_CREATED = "file.folder_created"
    FILE_UPLOADED = "file.uploaded"
    FILES_CLOSED = "files.closed"
    FILES_OPENED = "files.opened"
    MACHINE_DELETED = "machine.deleted"
    MACHINE_PLACEMENT_REPORTED = "machine.placement_reported"
    MACHINE_PREREGISTERED = "machine.preregistered"
    MACHINE_PURGED = "machine.purged"
    MACHINE_UPDATE_PUSHED = "machine.update_pushed"
    RECORDING_FINISHED = "recording.finished"
    RECORDING_PURGED = "recording.purged"
    RECORDING_STARTED = "recording.started"
    RECORDING_VIEWED = "recording.viewed"
    RELEASE_CREATED = "release.created"
    RELEASE_DELETED = "release.deleted"
    RELEASE_UPDATED = "release.updated"
    SESSION_CLOSED = "session.closed"
    SESSION_CONSENT_DENIED = "session.consent_denied"
    SESSION_CONSENT_GRANTED = "session.consent_granted"
    SESSION_CONSENT_REQUESTED = "session.consent_requested"
    SESSION_CONSENT_TIMEOUT = "session.consent_timeout"
    SESSION_DISCONNECTED = "session.disconnected"
    SESSION_OPENED = "session.opened"
    SESSION_PURGED = "session.purged"
    SUPPORT_CODE_CANCELLED = "support_code.cancelled"
    SUPPORT_CODE_CREATED = "support_code.created"
    SUPPORT_CODE_LOCKOUT = "support_code.lockout"
    TENANT_CREATED = "tenant.created"
    TENANT_UPDATED = "tenant.updated"
    USER_CLIENT_ACCESS = "user.client_access"
    USER_CREATED = "user.created"
    USER_DELETED = "user.deleted"
    USER_PERMISSIONS = "user.permissions"
    USER_UPDATED = "user.updated"
    VIEWER_DOWNGRADED = "viewer.downgraded"
    VIEWER_JOINED = "viewer.joined"
    VIEWER_LEFT = "viewer.left"
    VIEWER_TOKEN_ISSUED = "viewer.token_issued"  # noqa: S105 - a kind


class AuthenticatorAttachment(StrEnum):
    """Where the authenticator of a passkey is: built in (a laptop's, a phone's own) or
    roaming (a security key, a phone reached from another device)."""

    PLATFORM = "platform"
    CROSS_PLATFORM = "cross-platform"


class ConsentAnswer(StrEnum):
    """Where a technician asking to view an attended session stands with its end user."""

    ASKING = "asking"
    DENIED = "denied"
    TIMED_OUT = "timed out"


class RemovalAction(StrEnum):
    """What removing a machine did: ``purged`` soft-deletes, ``deleted`` deletes the row."""

    PURGED = "purged"
    DELETED = "deleted"


class SessionRemovalAction(StrEnum):
    """What removing a session did: soft-deleted it, or disconnected the live one."""

    PURGED = "purged"
    DISCONNECTED = "disconnected"


ProblemType = StrEnum(  # type: ignore[misc]
    "ProblemType", [(p.name, p.uri) for p in PROBLEM_TYPES], module=__name__)
ProblemType.__doc__ = ("The problem types of this API (GET the URI for a description); "
                       "a newer server may add types, so expect other URIs too.")


def _printable(text: str) -> str:
    if not printable(text):
        raise ValueError("control characters are not allowed")
    return text


Text = Annotated[str, Field(max_length=MAX_TEXT), AfterValidator(_printable)]
Secret = Annotated[str, Field(min_length=1, max_length=1024), AfterValidator(_printable)]
Username = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.@-]{1,64}$")]
Tags = Annotated[list[Text], Field(max_length=MAX_TAGS)]


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Query(BaseModel):
    """Query parameters (a parameter a model does not name is refused before parsing)."""

    model_config = ConfigDict(extra="forbid")


class Out(BaseModel):
    """A response body: its schema is the one of serialization, where every field is
    present (defaults included), so each is ``required``."""

    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)


# Enums in strict bodies: their values arrive as JSON strings.
RoleIn = Annotated[Role, Strict(False)]
PermissionIn = Annotated[Permission, Strict(False)]
AttachmentIn = Annotated[AuthenticatorAttachment, Strict(False)]


# -- auth ------------------------------------------------------------------------


OneTimeCode = Annotated[str, Field(min_length=1, max_length=32), AfterValidator(_printable)]


_B64URL = r"^[A-Za-z0-9_-]+$"
B64Id = Annotated[str, Field(min_length=1, max_length=1400, pattern=_B64URL,
                             description="base64url, without padding")]
"""A credential id, a signature, a user handle (WebAuthn allows ids of 1023 bytes)."""
B64Data = Annotated[str, Field(min_length=1, max_length=65536, pattern=_B64URL,
                               description="base64url, without padding")]
"""Client data, authenticator data, an attestation object (with its certificates)."""


class AssertionResponseIn(Body):
    """``AuthenticatorAssertionResponse`` in its JSON form (WebAuthn Level 3)."""

    clientDataJSON: B64Data
    authenticatorData: B64Data
    signature: B64Id
    userHandle: B64Id | None = None


class PasskeyAssertionIn(Body):
    """What ``navigator.credentials.get`` answered, in its JSON form
    (``PublicKeyCredential.toJSON()``)."""

    id: B64Id
    rawId: B64Id
    type: Literal["public-key"]
    response: AssertionResponseIn
    authenticatorAttachment: AttachmentIn | None = None
    clientExtensionResults: dict[str, Any] = {}


class AttestationResponseIn(Body):
    """``AuthenticatorAttestationResponse`` in its JSON form (WebAuthn Level 3)."""

    clientDataJSON: B64Data
    attestationObject: B64Data
    transports: Annotated[list[Annotated[str, Field(max_length=32)]], Field(max_length=8)] = []
    authenticatorData: B64Data | None = None
    publicKey: B64Data | None = None
    publicKeyAlgorithm: int | None = None


class PasskeyCredentialIn(Body):
    """What ``navigator.credentials.create`` answered, in its JSON form
    (``PublicKeyCredential.toJSON()``)."""

    id: B64Id
    rawId: B64Id
    type: Literal["public-key"]
    response: AttestationResponseIn
    authenticatorAttachment: AttachmentIn | None = None
    clientExtensionResults: dict[str, Any] = {}


class LoginIn(Body):
    username: Annotated[str, Field(min_length=1, max_length=64)]
    password: Secret
    otp: OneTimeCode | None = Field(
        None, description="the current TOTP code, when the account has TOTP")
    recovery_code: OneTimeCode | None = Field(
        None, description="one of the account's recovery codes, instead of otp (works once)")
    passkey: PasskeyAssertionIn | None = Field(
        None, description="a passkey's answer to the passkey_options of the "
                          "second-factor-needed problem, instead of otp")


class TokenOut(Out):
    access_token: str
    token_type: Literal["bearer"] = "bearer"  # noqa: S105 - the scheme name, not a secret
    expires_in: int


class SecondFactorOut(Out):
    totp_enrolled: bool
    passkeys: int = Field(description="how many passkeys the account has")
    required: bool = Field(description="whether the server requires this account to use one")
    token_has_second_factor: bool = Field(
        description="whether the calling token was issued after a second factor")
    recovery_codes_left: int


class TotpSecretOut(Out):
    secret: str = Field(description="base32 TOTP secret; not stored until confirmed")
    otpauth_uri: str = Field(description="the otpauth:// URI an authenticator app scans")


class TotpEnrolIn(Body):
    secret: Annotated[str, Field(pattern=r"^[A-Z2-7]{32,128}$")]
    code: OneTimeCode


class TotpEnrolledOut(TokenOut):
    recovery_codes: list[str] = Field(
        description="shown once: each logs in once in place of a TOTP code")


class PasskeyOptionsOut(Out):
    options: dict[str, Any] = Field(
        description="PublicKeyCredentialCreationOptions in their JSON form (WebAuthn Level "
                    "3), for navigator.credentials.create; its challenge works once, for "
                    "this account, within the timeout")


class PasskeyEnrolIn(Body):
    name: Annotated[Text, Field(min_length=1, max_length=64)] = Field(
        description="the owner's name for it (\"work laptop\")")
    credential: PasskeyCredentialIn


class PasskeyOut(Out):
    id: str
    name: str
    created_at: datetime
    last_used_at: datetime | None
    transports: list[str]


class PasskeyEnrolledOut(TokenOut):
    passkey: PasskeyOut


class LoginSessionOut(Out):
    id: str
    created_at: datetime
    expires_at: datetime
    client_ip: str
    user_agent: str
    second_factor: bool = Field(description="whether the login proved a second factor")
    current: bool = Field(description="whether this is the calling token's login")


class UnlockOut(Out):
    was_guarded: bool = Field(
        description="whether the account's guard was up (its failed logins are forgotten "
                    "either way)")


class PasswordIn(Body):
    password: Secret


class ChangePasswordIn(Body):
    current_password: Secret
    new_password: Annotated[Secret, Field(min_length=8)]


class MeOut(Out):
    id: str
    username: str
    role: Role
    permissions: list[Permission]
    client_access: list[str]
    tenant_id: str = Field(description="The tenant the account belongs to: all it sees")
    global_admin: bool = Field(
        description="An administrator of the default tenant, who also manages the tenants")


# -- users -------------------------------------------------------------------------


class UserOut(MeOut):
    disabled: bool
    created_at: datetime


class UserCreateIn(Body):
    username: Username
    password: Annotated[Secret, Field(min_length=8)]
    role: RoleIn = Role.TECHNICIAN
    permissions: Annotated[list[PermissionIn], Field(max_length=16)] = []
    client_access: Tags = []
    tenant_id: str | None = Field(
        None, max_length=36, description="The tenant of the new account (a global "
        "administrator's choice; anyone else's accounts are of their own tenant)")


# -- tenants -------------------------------------------------------------------------

TenantName = Annotated[str, Field(min_length=1, max_length=100), AfterValidator(_printable)]


class TenantOut(Out):
    id: str
    name: str
    disabled: bool
    created_at: datetime


class TenantCreateIn(Body):
    name: TenantName


class TenantPatchIn(Body):
    name: TenantName | None = None
    disabled: bool | None = Field(
        None, description="A disabled tenant's users cannot log in (their tokens stop "
        "working) and its agents cannot connect; its live sessions end")


class UserPatchIn(Body):
    role: RoleIn | None = None
    disabled: bool | None = None
    password: Annotated[Secret, Field(min_length=8)] | None = None


class PermissionsIn(Body):
    permissions: Annotated[list[PermissionIn], Field(max_length=16)]


class ClientAccessIn(Body):
    organizations: Tags


# -- machines ------------------------------------------------------------------------


class MachineOut(Out):
    agent_id: str
    machine_uid: str | None
    hostname: str
    os_version: str
    organization: str
    site: str
    tags: list[str]
    is_elevated: bool
    is_persistent: bool
    status: MachineStatus
    agent_version: str
    plugins: list[str] = Field(description='The loaded plugins the agent last reported, '
                               'each "name version" (empty until it reports them).')
    last_seen: datetime | None
    session_id: str | None


DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


class PageQuery(Query):
    """The paging parameters every list takes (see :mod:`.paging`)."""

    limit: Annotated[int, Field(ge=1, le=MAX_LIMIT, description=(
        f"items per page (default {DEFAULT_LIMIT}, at most {MAX_LIMIT}); a page may hold "
        "fewer while more follow: follow the Link header (rel=\"next\") until there is "
        "none"))] = DEFAULT_LIMIT
    cursor: Annotated[str | None, Field(max_length=512, description=(
        "where the page starts: opaque, taken from the previous page's Link header; "
        "absent for the first page"))] = None


class MachineQuery(PageQuery):
    organization: Text | None = None
    site: Text | None = None
    tag: Text | None = None
    status: MachineStatus | None = None
    q: Text | None = Field(default=None, description="text found in hostname, agent_id, "
                                                     "organization, site or a tag")


class MachineCreateIn(Body):
    organization: Text = ""
    site: Text = ""
    tags: Tags = []


class MachinePatchIn(Body):
    organization: Text | None = None
    site: Text | None = None
    tags: Tags | None = None


class MachineDeleteQuery(Query):
    uninstall: bool = False
    export: bool = False
    purge: bool = False


class SessionOut(Out):
    id: str
    agent_id: str
    is_managed: bool
    source: SessionSource | str = Field(description=(
        "the authentication method that opened the session: a built-in one, or a "
        "third-party method's name"))
    consent_state: ConsentState
    technician: str | None
    session_type: SessionType
    created_at: datetime
    ended_at: datetime | None
    end_reason: str | None
    live: bool
    viewer_count: int


class EventOut(Out):
    id: int
    kind: EventKind | str
    session_id: str | None
    agent_id: str | None
    actor: str | None
    target: str | None
    client_ip: str | None
    detail: dict[str, Any]
    created_at: datetime


class SessionEntryOut(Out):
    """One of a machine's sessions, in its history."""

    type: Literal["session"]
    at: datetime
    session: SessionOut


class EventEntryOut(Out):
    """One of a machine's audit events, in its history."""

    type: Literal["event"]
    at: datetime
    event: EventOut


class HistoryEntryOut(RootModel[Annotated[SessionEntryOut | EventEntryOut,
                                          Field(discriminator="type")]]):
    """An entry of a machine's history, newest first: a session or an audit event."""


class HistoryQuery(PageQuery):
    """A machine's history is paged like every list."""


class RemovalOut(Out):
    agent_id: str
    action: RemovalAction
    uninstall_sent: bool
    history: list[HistoryEntryOut] | None = Field(default=None, description=(
        "with export=true: the machine's history, newest first, up to 10,000 entries "
        "(page GET /history first for more); else null"))
    history_truncated: bool = Field(default=False, description=(
        "true when the machine had more history than the export holds"))


class BulkRemoveIn(Body):
    agent_ids: Annotated[list[Text], Field(min_length=1, max_length=500)]
    purge: bool = False
    uninstall: bool = False


class BulkRemovalOut(Out):
    removed: list[str]
    not_found: list[str]


class UpdatePushIn(Body):
    version: Annotated[str, Field(pattern=SEMVER_PATTERN, max_length=64)] | None = None


class UpdatePushedOut(Out):
    agent_id: str
    version: str


# -- agent keys -------------------------------------------------------------------------


class KeyCreateIn(Body):
    label: Text = ""


class KeyOut(Out):
    id: str
    agent_id: str
    label: str
    created_at: datetime | None
    last_used_at: datetime | None
    revoked_at: datetime | None


class IssuedKeyOut(KeyOut):
    key: str = Field(description="the plain cak_ key; shown only in this response")


# -- sessions ----------------------------------------------------------------------------


class SessionQuery(PageQuery):
    live: bool | None = Field(default=None, description=(
        "true: only the sessions live right now (from the relay), newest first; "
        "false: only those that are not"))


class SessionDeleteQuery(Query):
    purge: bool = False


class ViewerTokenQuery(Query):
    backstage: bool = Field(default=False, description=(
        "true: a token for a BACKSTAGE terminal (needs the 'backstage' permission; on an "
        "attended session the end user is asked, per the consent policy); false: to view "
        "or control the screen"))
    file_transfer: bool = Field(default=False, description=(
        "true: a token for a FILE_TRANSFER session (needs the 'file_transfer' permission; "
        "on an attended session the end user is asked, per the consent policy)"))


class SessionRemovalOut(Out):
    session_id: str
    action: SessionRemovalAction
    was_live: bool


class ViewerTokenOut(Out):
    token: str
    expires_in: int
    session_id: str
    node: str | None = Field(
        default=None, description="cluster mode: the node holding the session. Connect to "
                                  "/ws/viewer?node=<it>, and a balancer that routes by it "
                                  "(deploy/haproxy) sends the socket straight there; any "
                                  "other node forwards it. null on a single server")


# -- support codes --------------------------------------------------------------------------


class CodeCreateIn(Body):
    expires_in: Annotated[int, Field(ge=60, le=86_400)] = 3600


class CodeOut(Out):
    code: str
    status: CodeStatus
    technician: str
    created_at: datetime
    expires_at: datetime
    consumed_at: datetime | None
    agent_id: str | None
    session_id: str | None


class CodeValidateIn(Body):
    code: Annotated[str, Field(max_length=32)]


class CodeValidOut(Out):
    valid: Literal[True] = True
    technician: str
    expires_at: datetime
    organization: str = Field(
        "", description="the organization named beside the technician (setting "
                        "join_organization; empty when unset)")
    agent_available: bool = Field(
        False, description="whether POST /api/codes/agent has an agent to hand out "
                           "(setting join_agent_file)")


# -- releases --------------------------------------------------------------------------------

HttpsUrl = Annotated[str, Field(pattern=r"^https://[^\s/?#]+[^\s]*$", max_length=2048)]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-fA-F]{64}$")]


class ReleaseIn(Body):
    version: Annotated[str, Field(pattern=SEMVER_PATTERN, max_length=64)]
    download_url: HttpsUrl
    checksum_sha256: Sha256
    mandatory: bool = False
    notes: Annotated[str, Field(max_length=10_000)] = ""


class ReleasePatchIn(Body):
    download_url: HttpsUrl | None = None
    checksum_sha256: Sha256 | None = None
    mandatory: bool | None = None
    notes: Annotated[str, Field(max_length=10_000)] | None = None


class ReleaseOut(Out):
    version: str
    download_url: str
    checksum_sha256: str
    mandatory: bool
    notes: str
    created_at: datetime
    tenant_id: str = Field(description="The channel: the default tenant's is the whole "
                                       "server's, any other that tenant's alone")


class VersionOut(Out):
    version: str
    download_url: str
    checksum_sha256: str
    mandatory: bool


# -- audit and health ------------------------------------------------------------------------


class EventQuery(PageQuery):
    session_id: Text | None = None
    agent_id: Text | None = None


class RecordingQuery(PageQuery):
    session_id: Text | None = None
    agent_id: Text | None = None
    technician: Text | None = Field(default=None, description="one who watched (username)")
    since: datetime | None = Field(default=None, description="started at or after (RFC 3339)")


class RecordingState(StrEnum):
    """``recording`` while it is written; ``incomplete`` when it was cut short (see
    ``reason``)."""

    RECORDING = "recording"
    COMPLETE = "complete"
    INCOMPLETE = "incomplete"


class RecordingOut(Out):
    id: str
    session_id: str
    agent_id: str
    started_at: datetime
    ended_at: datetime | None
    state: RecordingState
    reason: str
    segments: int = Field(description="segments written: GET .../segments/{0..segments-1}")
    bytes: int
    sha256: str = Field(description="the last link of the segments' SHA-256 chain, once it "
                                    "ended (the recording's hash)")
    technicians: list[str] = Field(description="who watched while it ran (usernames), in the "
                                               "order they came, once it ended")


class RecordingCheckOut(Out):
    intact: bool = Field(description="the stored segments are the ones that were written")
    segments: int = Field(description="segments read back")
    sha256: str = Field(description="the chain's last link over the segments read back")
    first_bad: int | None = Field(description="the first segment that changed, where "
                                              "known")
    reason: str


class WebhookDeliveryQuery(PageQuery):
    failed: bool = Field(default=False, description="only the attempts that did not deliver "
                                                    "(retrying, failed, refused)")


class DeliveryOutcome(StrEnum):
    DELIVERED = "delivered"
    RETRYING = "retrying"
    FAILED = "failed"
    REFUSED = "refused"


class WebhookDeliveryOut(Out):
    """One attempt to deliver one event to one webhook target."""

    id: int
    delivery_id: str = Field(description="shared by every attempt of one delivery, and sent "
                                         "to the receiver as X-Remote-Support-Delivery")
    target: str = Field(description="the target's configured name")
    url: str = Field(description="the target's scheme, host and port (its path is not shown)")
    event: str
    attempt: int
    outcome: DeliveryOutcome = Field(description=(
        "delivered (2xx); retrying (failed, another attempt follows); failed (the last "
        "attempt, or an answer a retry cannot change); refused (the target's address is not "
        "allowed: nothing was sent)"))
    status_code: int | None = Field(description="the receiver's HTTP status; null when none "
                                                "came")
    error: str
    created_at: datetime


class HealthOut(Out):
    status: str
    version: str


class ViewerOriginOut(Out):
    """Whether ``/ws/viewer`` would accept this request's ``Origin`` (null: none sent)."""

    origin: str | None
    allowed: bool
    setting: Literal["REMOTE_SUPPORT_PUBLIC_ORIGINS"]


class FieldError(Out):
    field: str
    message: str


def _only_where_they_apply(schema: dict[str, Any]) -> None:
    """An optional member of a problem is absent, never null: drop ``null`` and the
    default from the published schema of each."""
    required = set(schema.get("required", []))
    for name, prop in schema.get("properties", {}).items():
        if name in required:
            continue
        prop.pop("default", None)
        branches = [b for b in prop.pop("anyOf", []) if b != {"type": "null"}]
        if len(branches) == 1:
            prop.update(branches[0])
        elif branches:
            prop["anyOf"] = branches


class ProblemOut(BaseModel):
    """RFC 9457 problem details; the extension members below appear where they apply."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_only_where_they_apply)
    type: ProblemType | str = Field(description="the problem type (switch on it): a relative "
                                                "reference to its description")
    title: str = Field(description="the type's title, the same for every problem of it")
    status: int
    detail: str = Field(description="what went wrong this time, for people")
    errors: list[FieldError] | None = Field(default=None, description=(
        "validation-failed: every offending field or parameter"))
    retry_after: int | None = Field(default=None, description=(
        "rate-limited: seconds to wait (as in Retry-After)"))
    consent: ConsentAnswer | None = Field(default=None, description=(
        "consent-refused and awaiting-consent of a viewer token: where the asking "
        "technician stands with the end user (asking: ask again after Retry-After)"))


class ProblemTypeOut(Out):
    """A problem type, as its URI describes it."""

    type: ProblemType
    title: str
    status: int
    description: str

"""Request and response bodies of the HTTP API (CONTRACT 2), as pydantic models.

Request bodies forbid unknown fields and coerce nothing (``strict``), so a
wrong type or a stray field is a 422 naming it. Response models are what the
handlers render and what the OpenAPI document publishes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from remote_core.records import UserRole
from remote_core.semver import SEMVER_PATTERN
from remote_core.textrules import MAX_TAGS, MAX_TEXT, printable

Permission = Literal["view", "control", "support_codes", "manage_machines"]
CodeStatus = Literal["pending", "connected", "cancelled", "expired"]


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
    model_config = ConfigDict(extra="ignore")


class Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- auth ------------------------------------------------------------------------


class LoginIn(Body):
    username: Annotated[str, Field(min_length=1, max_length=64)]
    password: Secret


class TokenOut(Out):
    access_token: str
    token_type: Literal["bearer"] = "bearer"  # noqa: S105 - the scheme name, not a secret
    expires_in: int


class ChangePasswordIn(Body):
    current_password: Secret
    new_password: Annotated[Secret, Field(min_length=8)]


class MeOut(Out):
    id: str
    username: str
    role: UserRole
    permissions: list[str]
    client_access: list[str]


# -- users -------------------------------------------------------------------------


class UserOut(MeOut):
    disabled: bool
    created_at: datetime | None


class UserCreateIn(Body):
    username: Username
    password: Annotated[Secret, Field(min_length=8)]
    role: UserRole = "technician"
    permissions: Annotated[list[Permission], Field(max_length=16)] = []
    client_access: Tags = []


class UserPatchIn(Body):
    role: UserRole | None = None
    disabled: bool | None = None
    password: Annotated[Secret, Field(min_length=8)] | None = None


class PermissionsIn(Body):
    permissions: Annotated[list[Permission], Field(max_length=16)]


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
    status: Literal["online", "offline"]
    agent_version: str
    last_seen: datetime | None
    session_id: str | None


class MachineQuery(Query):
    organization: Text | None = None
    site: Text | None = None
    tag: Text | None = None
    status: Literal["online", "offline"] | None = None
    q: Text | None = Field(default=None, description="text found in hostname, agent_id, "
                                                     "organization, site or a tag")
    limit: Annotated[int, Field(ge=1, le=10_000)] | None = None
    offset: Annotated[int, Field(ge=0, le=1_000_000)] = 0


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
    source: str
    consent_state: str
    technician: str | None
    session_type: int
    created_at: datetime | None
    ended_at: datetime | None
    end_reason: str | None
    live: bool
    viewer_count: int


class EventOut(Out):
    id: int | None
    kind: str
    session_id: str | None
    agent_id: str | None
    actor: str | None
    target: str | None
    client_ip: str | None
    detail: dict[str, Any]
    created_at: datetime | None


class HistoryOut(Out):
    agent_id: str
    sessions: list[SessionOut]
    events: list[EventOut]


class RemovalOut(Out):
    agent_id: str
    action: Literal["purged", "deleted"]
    uninstall_sent: bool
    history: HistoryOut | None = None


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


class SessionDeleteQuery(Query):
    purge: bool = False


class SessionRemovalOut(Out):
    session_id: str
    action: Literal["purged", "disconnected"]
    was_live: bool


class ViewerTokenOut(Out):
    token: str
    expires_in: int
    session_id: str


# -- support codes --------------------------------------------------------------------------


class CodeCreateIn(Body):
    expires_in: Annotated[int, Field(ge=60, le=86_400)] = 3600


class CodeOut(Out):
    code: str
    status: CodeStatus
    technician: str
    created_at: datetime | None
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
    created_at: datetime | None


class VersionOut(Out):
    version: str
    download_url: str
    checksum_sha256: str
    mandatory: bool


# -- audit and health ------------------------------------------------------------------------


class EventQuery(Query):
    session_id: Text | None = None
    agent_id: Text | None = None
    limit: Annotated[int, Field(ge=1, le=1000)] = 100


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


class ProblemOut(BaseModel):
    """RFC 9457 problem details; extension members may follow."""

    model_config = ConfigDict(extra="allow")
    type: str
    title: str
    status: int
    detail: str
    errors: list[FieldError] | None = None
    retry_after: int | None = None
    consent: Literal["asking", "denied", "timed out"] | None = Field(
        default=None, description="viewer token of an attended session: where the asking "
        "technician stands with the end user (asking: 409, ask again after Retry-After)")

"""Records to response bodies, and the client-access rule (CONTRACT 2) that filters them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from remote_core.protocol import pb
from remote_core.records import (
    AgentKey,
    AuditEvent,
    Machine,
    RecordingRecord,
    Release,
    SessionRecord,
    SupportCode,
    Tenant,
    User,
    tenant_of,
)

from ..problem import Problem
from . import schemas as s

if TYPE_CHECKING:
    from ...relay.directory import SessionDirectory
    from ...relay.session import SessionSnapshot
    from .endpoint import Call

__all__ = [
    "can_see",
    "code_out",
    "code_status",
    "created",
    "event_out",
    "key_out",
    "machine_out",
    "path_id",
    "recording_out",
    "release_out",
    "session_out",
    "tenant_out",
    "user_out",
    "visible_machine",
    "visible_organizations",
]


def visible_organizations(user: User) -> tuple[str, ...] | None:
    """``None`` when the user sees every organization (admins, or client access ``"*"``)."""
    if user.is_admin or "*" in user.client_access:
        return None
    return tuple(user.client_access)


def can_see(user: User, tenant_id: str | None, organization: str) -> bool:
    """Whether ``user`` may see a record of ``tenant_id`` and ``organization``: one of
    their own tenant, in an organization their client access covers."""
    if tenant_of(tenant_id) != tenant_of(user.tenant_id):
        return False
    allowed = visible_organizations(user)
    return allowed is None or organization in allowed


async def visible_machine(call: Call, agent_id: str, tenant_id: str | None) -> bool:
    """Whether the caller may see a record of ``tenant_id`` that belongs to machine
    ``agent_id`` (a session, a recording): it is of the caller's tenant, and the machine's
    organization (the live session's, else the stored machine's) is one the caller's
    client access covers. A machine that is gone is visible to those who see every
    organization only."""
    if tenant_of(tenant_id) != tenant_of(call.me.tenant_id):
        return False
    allowed = visible_organizations(call.me)
    if allowed is None:
        return True
    live = call.ctx.directory.session_for_agent(agent_id)
    if live is not None:
        organization: str | None = live.organization
    else:
        machine = await call.ctx.store.get_machine_by_id(agent_id)
        organization = machine.organization if machine else None
    return organization is not None and organization in allowed


def path_id(value: str, what: str) -> str:
    """A path identifier that cannot be one: 404 before it reaches the database."""
    if not value or len(value) > 200 or any(ord(c) < 32 for c in value):
        raise Problem(404, f"no such {what}")
    return value


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def created(moment: datetime | None) -> datetime:
    """A record's creation time; a row stored without one sorts first, as of 1970 (the
    store's migration gives such rows that time)."""
    return moment or EPOCH


def _timestamp(moment: datetime | None) -> str | None:
    """RFC 3339, as pydantic writes it everywhere else in the API."""
    return moment.isoformat().replace("+00:00", "Z") if moment else None


def machine_out(machine: Machine, registry: SessionDirectory) -> dict[str, Any]:
    """A :class:`~.schemas.MachineOut` body as a plain dict: stored rows are trusted, and
    lists run to 10,000 machines, where building a model per row cost more than the query."""
    live = registry.session_for_agent(machine.agent_id)
    return {
        "agent_id": machine.agent_id,
        "machine_uid": machine.machine_uid,
        "hostname": machine.hostname,
        "os_version": machine.os_version,
        "organization": machine.organization,
        "site": machine.site,
        "tags": list(machine.tags),
        "is_elevated": machine.is_elevated,
        "is_persistent": machine.is_persistent,
        "status": "online" if registry.is_online(machine.agent_id) else "offline",
        "agent_version": machine.agent_version,
        "plugins": list(machine.plugins),
        "last_seen": _timestamp(machine.last_seen),
        "session_id": live.session_id if live else None,
    }


def _session_type(number: int) -> s.SessionType:
    return s.SessionType(pb.SessionType.Name(number).lower())


def recording_out(record: RecordingRecord) -> s.RecordingOut:
    return s.RecordingOut(
        id=record.id, session_id=record.session_id, agent_id=record.agent_id,
        started_at=record.started_at, ended_at=record.ended_at,
        state=s.RecordingState(record.state), reason=record.reason, segments=record.segments,
        bytes=record.bytes, sha256=record.sha256, technicians=list(record.technicians))


def session_out(record: SessionRecord | None, live: SessionSnapshot | None) -> s.SessionOut:
    if record is not None:
        return s.SessionOut(
            id=record.id, agent_id=record.agent_id, is_managed=record.is_managed,
            source=record.source,
            consent_state=s.ConsentState(live.consent_state if live else record.consent_state),
            technician=record.technician, session_type=_session_type(record.session_type),
            created_at=created(record.created_at), ended_at=record.ended_at,
            end_reason=record.end_reason, live=live is not None,
            viewer_count=live.viewer_count if live else 0,
        )
    assert live is not None
    return s.SessionOut(
        id=live.session_id, agent_id=live.agent_id, is_managed=live.is_managed,
        source=live.source, consent_state=s.ConsentState(live.consent_state),
        technician=live.technician_id, session_type=s.SessionType.SCREEN_CONTROL,
        created_at=created(live.created_at), ended_at=None, end_reason=None,
        live=True, viewer_count=live.viewer_count,
    )


def event_out(event: AuditEvent) -> s.EventOut:
    assert event.id is not None, "a stored event has an id"
    return s.EventOut(
        id=event.id, kind=event.kind, session_id=event.session_id, agent_id=event.agent_id,
        actor=event.actor, target=event.target, client_ip=event.client_ip,
        detail=dict(event.detail), created_at=created(event.created_at),
    )


def key_out(key: AgentKey) -> s.KeyOut:
    return s.KeyOut(id=key.id, agent_id=key.agent_id, label=key.label,
                    created_at=created(key.created_at), last_used_at=key.last_used_at,
                    revoked_at=key.revoked_at)


def user_out(user: User) -> s.UserOut:
    return s.UserOut(id=user.id, username=user.username, role=s.Role(user.role),
                     permissions=[s.Permission(p) for p in user.permissions],
                     client_access=list(user.client_access), disabled=user.disabled,
                     created_at=created(user.created_at), tenant_id=tenant_of(user.tenant_id),
                     global_admin=user.is_global_admin)


def tenant_out(tenant: Tenant) -> s.TenantOut:
    return s.TenantOut(id=tenant.id, name=tenant.name, disabled=tenant.disabled,
                       created_at=created(tenant.created_at))


def release_out(release: Release) -> s.ReleaseOut:
    return s.ReleaseOut(version=release.version, download_url=release.download_url,
                        checksum_sha256=release.checksum_sha256, mandatory=release.mandatory,
                        notes=release.notes, created_at=created(release.created_at),
                        tenant_id=tenant_of(release.tenant_id))


def code_status(code: SupportCode, now_ts: float) -> s.CodeStatus:
    if code.consumed_at is not None:
        return s.CodeStatus.CONNECTED
    if code.cancelled_at is not None:
        return s.CodeStatus.CANCELLED
    if code.expires_at.timestamp() <= now_ts:
        return s.CodeStatus.EXPIRED
    return s.CodeStatus.PENDING


def code_out(code: SupportCode, now_ts: float) -> s.CodeOut:
    return s.CodeOut(code=code.code, status=code_status(code, now_ts),
                     technician=code.technician_name, created_at=created(code.created_at),
                     expires_at=code.expires_at, consumed_at=code.consumed_at,
                     agent_id=code.agent_id, session_id=code.session_id)

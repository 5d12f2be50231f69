"""``SqlStore``: the core's :class:`~remote_core.interfaces.Store` on SQLAlchemy 2.

Each method runs one synchronous operation from ``_machines``, ``_accounts`` or
``_records`` in one transaction through a :class:`~._engine.Runner`. Driver
errors surface as :class:`~remote_core.errors.StoreError` (duplicates as
:class:`~remote_core.errors.ConflictError`), never with statement parameters.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime

from sqlalchemy.engine import Connection

from remote_core.errors import ConflictError, StoreError
from remote_core.interfaces import Store
from remote_core.records import (
    DEFAULT_TENANT_ID,
    AgentKey,
    AuditEvent,
    Keyset,
    LoginSession,
    Machine,
    MachineFilter,
    MachineReport,
    Passkey,
    RecordingRecord,
    Release,
    RestoreResult,
    SecondFactors,
    SessionRecord,
    SigningKey,
    SupportCode,
    Tenant,
    User,
    WebAuthnChallenge,
    WebhookDelivery,
    utcnow,
)

from . import (
    _accounts,
    _factors,
    _machines,
    _migrate,
    _nodes,
    _recordings,
    _records,
    _tenants,
    _webhooks,
)
from ._engine import Runner, make_runner
from ._sql import values_given

__all__ = ["SqlStore"]

log = logging.getLogger(__name__)

UPSERT_ATTEMPTS = 3


class SqlStore(Store):
    """SQLite or PostgreSQL, selected by the database URL (CONTRACT 4)."""

    def __init__(self, url: str) -> None:
        self._runner: Runner = make_runner(url)

    @property
    def runner(self) -> Runner:
        """The engine wrapper (tests and benchmarks reach the dialect through it)."""
        return self._runner

    # -- lifecycle ------------------------------------------------------------------
    async def open(self) -> None:
        """Apply pending migrations under the cross-process lock (a no-op at head)."""
        await self._runner.write(_migrate.upgrade)

    async def close(self) -> None:
        await self._runner.dispose()

    async def ping(self) -> bool:
        try:
            await self._runner.ping()
        except StoreError:
            return False
        return True

    async def get_or_create_secret(self, name: str, value: str) -> str:
        return await self._runner.write(_accounts.get_or_create_secret, name, value, utcnow())

    async def signing_keys(self, seed: SigningKey) -> list[SigningKey]:
        # Servers reread the ring every half minute: a read, unless there is none yet.
        ring = await self._runner.read(_accounts.signing_key_ring)
        return ring or await self._runner.write(_accounts.seeded_signing_keys, seed)

    async def rotate_signing_key(self, new: SigningKey,
                                 previous_until: datetime) -> list[SigningKey]:
        return await self._runner.write(_accounts.rotate_signing_key, new, previous_until,
                                        utcnow())

    # -- tenants -----------------------------------------------------------------------
    async def create_tenant(self, tenant: Tenant) -> Tenant:
        if tenant.created_at is None:
            tenant = dataclasses.replace(tenant, created_at=utcnow())
        return await self._runner.write(_tenants.create_tenant, tenant)

    async def get_tenant(self, tenant_id: str) -> Tenant | None:
        return await self._runner.read(_tenants.get_tenant, tenant_id)

    async def list_tenants(self) -> list[Tenant]:
        return await self._runner.read(_tenants.list_tenants)

    async def update_tenant(self, tenant_id: str, *, name: str | None = None,
                            disabled: bool | None = None) -> Tenant | None:
        return await self._runner.write(_tenants.update_tenant, tenant_id, name, disabled)

    # -- machines ------------------------------------------------------------------
    async def upsert_machine(self, report: MachineReport) -> Machine:
        # Two first registrations of one uid under different agent ids can collide;
        # the loser retries and then finds the winner's row.
        for attempt in range(1, UPSERT_ATTEMPTS + 1):
            try:
                return await self._runner.write(_machines.upsert_machine, report, utcnow())
            except ConflictError:
                if attempt == UPSERT_ATTEMPTS:
                    raise
                log.debug("machine upsert collided, retrying (attempt %d)", attempt)
        raise AssertionError("unreachable")

    async def create_machine(self, agent_id: str, organization: str = "", site: str = "",
                             tags: Sequence[str] = (), *,
                             tenant_id: str = DEFAULT_TENANT_ID) -> Machine:
        return await self._runner.write(_machines.create_machine, agent_id, organization, site,
                                        tuple(tags), utcnow(), tenant_id)

    async def get_machine(self, agent_id: str) -> Machine | None:
        return await self._runner.read(_machines.get_machine, agent_id)

    async def get_machine_by_id(self, agent_id: str) -> Machine | None:
        return await self._runner.read(_by_id, agent_id)

    async def get_machine_by_uid(self, machine_uid: str) -> Machine | None:
        return await self._runner.read(_machines.get_machine_by_uid, machine_uid)

    async def list_machines(self, filter: MachineFilter | None = None) -> list[Machine]:
        return await self._runner.read(_machines.list_machines, filter or MachineFilter())

    async def update_machine(self, agent_id: str, *, organization: str | None = None,
                             site: str | None = None,
                             tags: Sequence[str] | None = None) -> Machine | None:
        changes = values_given(organization=organization, site=site)
        if tags is not None:
            changes["tags"] = list(tags)
        return await self._runner.write(_machines.update_machine, agent_id, changes, utcnow())

    async def set_machine_status(self, agent_id: str, status: str,
                                 last_seen: datetime | None = None) -> None:
        await self._runner.write(_machines.set_machine_status, agent_id, status, last_seen)

    async def set_machines_seen(self, seen: Mapping[str, datetime]) -> None:
        if seen:
            await self._runner.write(_machines.set_machines_seen, dict(seen))

    async def set_machines_offline(self, agent_ids: Collection[str], last_seen: datetime) -> None:
        if agent_ids:
            await self._runner.write(_machines.set_machines_offline, tuple(agent_ids), last_seen)

    async def set_all_machines_offline(self, keep: Collection[str] = ()) -> int:
        return await self._runner.write(_machines.set_all_machines_offline, tuple(keep))

    async def soft_delete_machine(self, agent_id: str) -> bool:
        return await self._runner.write(_machines.soft_delete_machine, agent_id, utcnow())

    async def hard_delete_machine(self, agent_id: str) -> bool:
        return await self._runner.write(_machines.hard_delete_machine, agent_id)

    async def restore_machines(self) -> RestoreResult:
        return await self._runner.read(_machines.restore_machines)

    # -- agent keys ------------------------------------------------------------------
    async def add_agent_key(self, agent_id: str, key_hash: str, label: str = "") -> AgentKey:
        return await self._runner.write(_machines.add_agent_key, agent_id, key_hash, label,
                                        utcnow())

    async def find_agent_key(self, key_hash: str) -> AgentKey | None:
        return await self._runner.read(_machines.find_agent_key, key_hash)

    async def list_agent_keys(self, agent_id: str, *, after: Keyset | None = None,
                              limit: int | None = None) -> list[AgentKey]:
        return await self._runner.read(_machines.list_agent_keys, agent_id, after, limit)

    async def revoke_agent_key(self, agent_id: str, key_id: str) -> AgentKey | None:
        return await self._runner.write(_machines.revoke_agent_key, agent_id, key_id, utcnow())

    async def touch_agent_key(self, key_id: str) -> None:
        await self._runner.write(_machines.touch_agent_key, key_id, utcnow())

    # -- support codes ------------------------------------------------------------------
    async def create_support_code(self, code: SupportCode) -> SupportCode:
        return await self._runner.write(_records.create_support_code, code, utcnow())

    async def get_support_code(self, code: str) -> SupportCode | None:
        return await self._runner.read(_records.get_support_code, code)

    async def consume_support_code(self, code: str, agent_id: str, session_id: str,
                                   now: datetime) -> bool:
        return await self._runner.write(_records.consume_support_code, code, agent_id,
                                        session_id, now)

    async def list_support_codes(self, created_by: str | None = None, *,
                                 after: Keyset | None = None, limit: int | None = None,
                                 tenant_id: str | None = None) -> list[SupportCode]:
        return await self._runner.read(_records.list_support_codes, created_by, after, limit,
                                       tenant_id)

    async def cancel_support_code(self, code: str) -> bool:
        return await self._runner.write(_records.cancel_support_code, code, utcnow())

    # -- sessions ------------------------------------------------------------------
    async def create_session(self, session: SessionRecord) -> SessionRecord:
        return await self._runner.write(_records.create_session, session, utcnow())

    async def update_session(self, session_id: str, *, consent_state: str | None = None,
                             ended_at: datetime | None = None,
                             end_reason: str | None = None) -> None:
        changes = values_given(consent_state=consent_state, ended_at=ended_at,
                               end_reason=end_reason)
        await self._runner.write(_records.update_session, session_id, changes)

    async def end_open_sessions(self, end_reason: str, ended_at: datetime, *,
                                keep: Collection[str] = (),
                                created_before: datetime | None = None) -> int:
        return await self._runner.write(_records.end_open_sessions, end_reason, ended_at,
                                        tuple(keep), created_before)

    async def get_session(self, session_id: str) -> SessionRecord | None:
        return await self._runner.read(_records.get_session, session_id)

    async def end_sessions(self, session_ids: Collection[str], ended_at: datetime,
                           end_reason: str) -> None:
        if session_ids:
            await self._runner.write(_records.end_sessions, tuple(session_ids), ended_at,
                                     end_reason)

    async def ended_sessions(self, session_ids: Collection[str]) -> set[str]:
        return await self._runner.read(_records.ended_sessions, tuple(session_ids))

    async def list_sessions(self, agent_id: str | None = None, limit: int = 100, *,
                            after: Keyset | None = None,
                            tenant_id: str | None = None) -> list[SessionRecord]:
        return await self._runner.read(_records.list_sessions, agent_id, limit, after,
                                       tenant_id)

    async def soft_delete_session(self, session_id: str) -> bool:
        return await self._runner.write(_records.soft_delete_session, session_id, utcnow())

    # -- cluster nodes ----------------------------------------------------------
    async def beat_node(self, node_id: str, on_bus: bool, at: datetime) -> None:
        await self._runner.write(_nodes.beat_node, node_id, on_bus, at)

    async def nodes_on_bus(self, since: datetime) -> set[str]:
        return await self._runner.read(_nodes.nodes_on_bus, since)

    async def forget_node(self, node_id: str) -> None:
        await self._runner.write(_nodes.forget_node, node_id)

    # -- users ------------------------------------------------------------------
    async def create_user(self, user: User) -> User:
        return await self._runner.write(_accounts.create_user, user, utcnow())

    async def create_first_admin(self, user: User) -> bool:
        return await self._runner.write(_accounts.create_first_admin, user, utcnow())

    async def get_user(self, user_id: str) -> User | None:
        return await self._runner.read(_accounts.get_user, user_id)

    async def get_user_by_username(self, username: str) -> User | None:
        return await self._runner.read(_accounts.get_user_by_username, username)

    async def list_users(self, *, after: Keyset | None = None, limit: int | None = None,
                         tenant_id: str | None = None) -> list[User]:
        return await self._runner.read(_accounts.list_users, after, limit, tenant_id)

    async def update_user(self, user_id: str, *, password_hash: str | None = None,
                          role: str | None = None, disabled: bool | None = None,
                          permissions: Sequence[str] | None = None,
                          client_access: Sequence[str] | None = None) -> User | None:
        return await self._runner.write(
            _update_user, user_id, password_hash, role, disabled,
            None if permissions is None else tuple(permissions),
            None if client_access is None else tuple(client_access),
        )

    async def delete_user(self, user_id: str) -> bool:
        return await self._runner.write(_accounts.delete_user, user_id)

    async def record_login_address(self, user_id: str, client_ip: str, keep: int) -> None:
        await self._runner.write(_accounts.record_login_address, user_id, client_ip, keep,
                                 utcnow())

    async def is_login_address(self, user_id: str, client_ip: str) -> bool:
        return await self._runner.read(_accounts.is_login_address, user_id, client_ip)

    # -- second factors ------------------------------------------------------------
    async def get_second_factors(self, user_id: str) -> SecondFactors:
        return await self._runner.read(_factors.get_second_factors, user_id)

    async def set_totp(self, user_id: str, secret: str | None,
                       recovery_hashes: Sequence[str] = ()) -> None:
        await self._runner.write(_factors.set_totp, user_id, secret, tuple(recovery_hashes))

    async def add_login_session(self, session: LoginSession) -> None:
        await self._runner.write(_factors.add_login_session, session)

    async def get_login_session(self, session_id: str) -> LoginSession | None:
        return await self._runner.read(_factors.get_login_session, session_id)

    async def list_login_sessions(self, user_id: str) -> list[LoginSession]:
        return await self._runner.read(_factors.list_login_sessions, user_id)

    async def end_login_sessions(self, user_id: str, session_id: str | None = None) -> int:
        return await self._runner.write(_factors.end_login_sessions, user_id, session_id)

    async def use_totp_step(self, user_id: str, step: int) -> bool:
        return await self._runner.write(_factors.use_totp_step, user_id, step)

    async def consume_recovery_code(self, user_id: str, code_hash: str) -> bool:
        return await self._runner.write(_factors.consume_recovery_code, user_id, code_hash)

    async def bump_token_generation(self, user_id: str) -> int:
        return await self._runner.write(_factors.bump_token_generation, user_id)

    # -- passkeys ---------------------------------------------------------------------------
    async def add_webauthn_challenge(self, challenge: WebAuthnChallenge) -> None:
        await self._runner.write(_factors.add_webauthn_challenge, challenge)

    async def take_webauthn_challenge(self, challenge: str, user_id: str,
                                      purpose: str) -> bool:
        return await self._runner.write(_factors.take_webauthn_challenge, challenge, user_id,
                                        purpose)

    async def add_passkey(self, passkey: Passkey) -> None:
        await self._runner.write(_factors.add_passkey, passkey)

    async def list_passkeys(self, user_id: str) -> list[Passkey]:
        return await self._runner.read(_factors.list_passkeys, user_id)

    async def delete_passkeys(self, user_id: str, passkey_id: str | None = None) -> int:
        return await self._runner.write(_factors.delete_passkeys, user_id, passkey_id)

    async def use_passkey(self, passkey_id: str, seen_count: int, new_count: int) -> bool:
        return await self._runner.write(_factors.use_passkey, passkey_id, seen_count,
                                        new_count)

    # -- releases ------------------------------------------------------------------
    async def create_release(self, release: Release) -> Release:
        return await self._runner.write(_records.create_release, release, utcnow())

    async def get_release(self, version: str) -> Release | None:
        return await self._runner.read(_records.get_release, version)

    async def list_releases(self, *, after: Keyset | None = None, limit: int | None = None,
                            tenant_id: str | None = None) -> list[Release]:
        return await self._runner.read(_records.list_releases, after, limit, tenant_id)

    async def update_release(self, version: str, *, download_url: str | None = None,
                             checksum_sha256: str | None = None, mandatory: bool | None = None,
                             notes: str | None = None) -> Release | None:
        changes = values_given(download_url=download_url, checksum_sha256=checksum_sha256,
                               mandatory=mandatory, notes=notes)
        return await self._runner.write(_records.update_release, version, changes)

    async def delete_release(self, version: str) -> bool:
        return await self._runner.write(_records.delete_release, version)

    # -- audit ------------------------------------------------------------------
    async def add_event(self, event: AuditEvent) -> None:
        await self._runner.write(_records.add_event, event, utcnow())

    async def add_events(self, events: Sequence[AuditEvent]) -> None:
        if events:
            await self._runner.write(_records.add_events, list(events), utcnow())

    async def list_events(self, session_id: str | None = None, agent_id: str | None = None,
                          limit: int = 100, *, after: Keyset | None = None,
                          tenant_id: str | None = None) -> list[AuditEvent]:
        return await self._runner.read(_records.list_events, session_id, agent_id, limit,
                                       after, tenant_id)

    # -- session recordings ---------------------------------------------------------
    async def add_recording(self, recording: RecordingRecord) -> None:
        await self._runner.write(_recordings.add_recording, recording)

    async def finish_recording(self, recording_id: str, *, ended_at: datetime, state: str,
                               reason: str, segments: int, bytes: int, sha256: str,
                               technicians: Sequence[str] = ()) -> None:
        await self._runner.write(_recordings.finish_recording, recording_id, {
            "ended_at": ended_at, "state": state, "reason": reason, "segments": segments,
            "bytes": bytes, "sha256": sha256, "technicians": tuple(technicians)})

    async def get_recording(self, recording_id: str) -> RecordingRecord | None:
        return await self._runner.read(_recordings.get_recording, recording_id)

    async def list_recordings(self, *, session_id: str | None = None,
                              agent_id: str | None = None, technician: str | None = None,
                              since: datetime | None = None, limit: int = 100,
                              after: Keyset | None = None,
                              tenant_id: str | None = None) -> list[RecordingRecord]:
        return await self._runner.read(_recordings.list_recordings, session_id, agent_id,
                                       technician, since, limit, after, tenant_id)

    async def delete_recording(self, recording_id: str) -> bool:
        return await self._runner.write(_recordings.delete_recording, recording_id)

    async def end_open_recordings(self, reason: str, ended_at: datetime) -> int:
        return await self._runner.write(_recordings.end_open_recordings, reason, ended_at)

    # -- webhook delivery log -------------------------------------------------------
    async def add_webhook_delivery(self, delivery: WebhookDelivery) -> None:
        await self._runner.write(_webhooks.add_webhook_delivery, delivery, utcnow())

    async def list_webhook_deliveries(self, limit: int = 100, *, after: Keyset | None = None,
                                      failed_only: bool = False) -> list[WebhookDelivery]:
        return await self._runner.read(_webhooks.list_webhook_deliveries, limit, after,
                                       failed_only)

    async def prune_webhook_deliveries(self, before: datetime) -> int:
        return await self._runner.write(_webhooks.prune_webhook_deliveries, before)


def _by_id(conn: Connection, agent_id: str) -> Machine | None:
    return _machines.get_machine(conn, agent_id, include_deleted=True)


def _update_user(conn: Connection, user_id: str, password_hash: str | None, role: str | None,
                 disabled: bool | None, permissions: Sequence[str] | None,
                 client_access: Sequence[str] | None) -> User | None:
    return _accounts.update_user(conn, user_id, password_hash=password_hash, role=role,
                                 disabled=disabled, permissions=permissions,
                                 client_access=client_access)

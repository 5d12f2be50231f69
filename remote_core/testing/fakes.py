"""In-memory doubles of the core's contracts, for unit tests that need no database.

:class:`MemoryStore` is a whole :class:`~remote_core.interfaces.Store` kept in
dicts, held to the same contract suite as the SQL store
(:mod:`remote_core.testing.store_contract`), so a unit test of admission or
routing behaves as it would against SQLite or PostgreSQL: soft deletes hide
rows, a support code has one winner, placement is the operator's, duplicates
raise :class:`~remote_core.errors.ConflictError`, naive datetimes and audit
details that are not JSON are refused. ``down()`` makes it fail like a database
outage. :class:`StaticAuthenticator` answers agent credentials from a fixed
table; :func:`static_auth_plugin` registers it with the plugin manager.

Like httpx's ``MockTransport``, these replace a real part only where the test is
about something else; the store's own behaviour is tested on real databases.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import uuid
from collections.abc import (
    Awaitable,
    Callable,
    Collection,
    Coroutine,
    Iterable,
    Mapping,
    Sequence,
)
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Concatenate, ParamSpec, TypeVar

import anyio.lowlevel

from .. import hookimpl
from ..errors import ConflictError, NotFoundError, StoreError
from ..interfaces import Authenticator, Store
from ..records import (
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
    tenant_of,
    utcnow,
)
from ..types import AgentCredential, AgentIdentity, AuthMethod, AuthRejected

__all__ = [
    "MemoryStore",
    "StaticAuthenticator",
    "attended_identity",
    "keyed_identity",
    "static_auth_plugin",
]

_P = ParamSpec("_P")
_T = TypeVar("_T")
_R = TypeVar("_R")

_KEY_HASH = re.compile(r"^[0-9a-f]{64}$")
_PLACEMENT = ("organization", "site", "tags")
_OPERATIONS = frozenset(Store.__abstractmethods__)
_EPOCH = datetime.min.replace(tzinfo=UTC)


def _operation(method: Callable[Concatenate[MemoryStore, _P], Awaitable[_T]]
               ) -> Callable[Concatenate[MemoryStore, _P], Coroutine[Any, Any, _T]]:
    """Every call yields to the event loop first, as a real store's I/O does (so callers'
    races show), then fails if the store is down. The body that follows never awaits:
    each operation is atomic, which is what makes check-and-set (codes, first admin,
    upserts) race-free within one event loop."""
    name = method.__name__

    async def run(self: MemoryStore, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        await anyio.lowlevel.checkpoint()
        if name in self._down:
            raise StoreError(f"the store is down ({name}): MemoryStore.down() was called")
        return await method(self, *args, **kwargs)

    functools.update_wrapper(run, method)
    return run


def _utc(value: datetime) -> datetime:
    """Aware UTC, as the SQL store keeps it; a naive datetime is refused there too."""
    if value.tzinfo is None:
        raise StoreError(f"naive datetime {value!r}: records use timezone-aware UTC")
    return value.astimezone(UTC)


def _utc_or_none(value: datetime | None) -> datetime | None:
    return None if value is None else _utc(value)


def _given(**values: Any) -> dict[str, Any]:
    """The keyword arguments that are not ``None`` ("not given; keep what is stored")."""
    return {name: value for name, value in values.items() if value is not None}


def _copies(records: Iterable[_R]) -> list[_R]:
    return [copy.deepcopy(record) for record in records]


def _page(records: Iterable[_R], key: Callable[[_R], tuple[datetime, Any]], *,
          after: Keyset | None, limit: int | None, newest_first: bool) -> list[_R]:
    """The SQL store's keyset paging: ordered by ``key`` (creation time, then id), past
    ``after``, at most ``limit`` (``None``: all); copies."""
    ordered = sorted(records, key=key, reverse=newest_first)
    if after is not None:
        mark = (_utc(after.created_at), after.id)
        ordered = [r for r in ordered if (key(r) < mark if newest_first else key(r) > mark)]
    return _copies(ordered if limit is None else ordered[:max(limit, 0)])


class MemoryStore(Store):
    """A :class:`~remote_core.interfaces.Store` in plain dicts, for one event loop.

    Rows are kept as the frozen records themselves; every read returns a copy. Data
    outlives ``close()`` (as a database outlives a connection pool) and ``open()``.
    """

    def __init__(self) -> None:
        self._down: frozenset[str] = frozenset()
        self._secrets: dict[str, str] = {}
        self._signing_keys: dict[str, SigningKey] = {}
        self._machines: dict[str, Machine] = {}  # by agent_id, soft-deleted included
        self._keys: dict[str, AgentKey] = {}  # by id
        self._codes: dict[str, SupportCode] = {}
        self._sessions: dict[str, SessionRecord] = {}
        self._users: dict[str, User] = {}
        self._login_addresses: dict[tuple[str, str], datetime] = {}
        self._factors: dict[str, SecondFactors] = {}
        self._totp_steps: dict[str, int] = {}
        self._logins: dict[str, LoginSession] = {}
        self._challenges: dict[str, WebAuthnChallenge] = {}
        self._passkeys: dict[str, Passkey] = {}  # by id
        self._releases: dict[str, Release] = {}
        self._events: list[AuditEvent] = []
        self._deliveries: list[WebhookDelivery] = []
        self._recordings: dict[str, RecordingRecord] = {}
        self._nodes: dict[str, tuple[bool, datetime]] = {}  # node -> on the bus, seen at
        self._tenants: dict[str, Tenant] = {
            DEFAULT_TENANT_ID: Tenant(DEFAULT_TENANT_ID, "default", created_at=_EPOCH)}

    # -- outages -------------------------------------------------------------------------
    def down(self, *methods: str) -> None:
        """Fail like an unreachable database: the named methods (every one when none is
        named) raise :class:`StoreError` until :meth:`up`; ``ping()`` answers False when
        it is among them, and ``close()`` never fails (releasing a pool needs no database)."""
        unknown = sorted(set(methods) - _OPERATIONS)
        if unknown:
            raise ValueError(f"not Store methods: {', '.join(unknown)}")
        self._down = self._down | (frozenset(methods) or _OPERATIONS)

    def up(self) -> None:
        """End every outage :meth:`down` started."""
        self._down = frozenset()

    # -- lifecycle -----------------------------------------------------------------------
    @_operation
    async def open(self) -> None:
        """Nothing to connect or migrate."""

    async def close(self) -> None:
        """Nothing to release; the data stays."""

    async def ping(self) -> bool:
        await anyio.lowlevel.checkpoint()
        return "ping" not in self._down

    @_operation
    async def get_or_create_secret(self, name: str, value: str) -> str:
        return self._secrets.setdefault(name, value)

    def _ring(self) -> list[SigningKey]:
        return sorted(_copies(self._signing_keys.values()), key=lambda k: (k.created_at, k.kid))

    @staticmethod
    def _signing_key(key: SigningKey) -> SigningKey:
        return replace(key, created_at=_utc(key.created_at),
                       verify_until=_utc_or_none(key.verify_until))

    @_operation
    async def signing_keys(self, seed: SigningKey) -> list[SigningKey]:
        if not self._signing_keys:
            self._signing_keys[seed.kid] = self._signing_key(seed)
        return self._ring()

    @_operation
    async def rotate_signing_key(self, new: SigningKey,
                                 previous_until: datetime) -> list[SigningKey]:
        until, now = _utc(previous_until), utcnow()
        # The ring changes whole or not at all, as in one transaction.
        ring = {kid: key if key.verify_until is not None else replace(key, verify_until=until)
                for kid, key in self._signing_keys.items()
                if key.verify_until is None or key.verify_until > now}
        if new.kid in ring:
            raise ConflictError(f"signing key {new.kid!r} exists")
        ring[new.kid] = self._signing_key(new)
        self._signing_keys = ring
        return self._ring()

    # -- machines --------------------------------------------------------------------------
    def _live(self, agent_id: str) -> Machine | None:
        machine = self._machines.get(agent_id)
        return machine if machine is not None and machine.deleted_at is None else None

    def _holder_of_uid(self, machine_uid: str) -> Machine | None:
        """The row holding ``machine_uid``, soft-deleted or not (the uid is unique)."""
        return next((m for m in self._machines.values() if m.machine_uid == machine_uid), None)

    @_operation
    async def upsert_machine(self, report: MachineReport) -> Machine:
        uid = report.machine_uid or None
        values = _given(hostname=report.hostname, os_version=report.os_version,
                        organization=report.organization, site=report.site,
                        tags=None if report.tags is None else tuple(report.tags),
                        is_elevated=report.is_elevated, is_persistent=report.is_persistent,
                        status=report.status, agent_version=report.agent_version,
                        plugins=None if report.plugins is None else tuple(report.plugins))
        # The conflict target is the uid when one is reported, else the agent_id; a uid
        # new to the store moves onto the agent_id's row, when there is one.
        stored = (self._holder_of_uid(uid) if uid else None) or self._machines.get(
            report.agent_id)
        now = utcnow()
        if stored is None:
            machine = Machine(agent_id=report.agent_id, machine_uid=uid, created_at=now,
                              updated_at=now, last_seen=now,
                              tenant_id=tenant_of(report.tenant_id), **values)
        else:
            # Placement is the operator's: a report fills only what is empty.
            values = {k: v for k, v in values.items()
                      if k not in _PLACEMENT or not getattr(stored, k)}
            machine = replace(stored, **values, updated_at=now, last_seen=now, deleted_at=None)
            if uid:
                machine = replace(machine, machine_uid=uid)
        self._machines[machine.agent_id] = machine
        return copy.deepcopy(machine)

    # -- tenants -------------------------------------------------------------------------
    @_operation
    async def create_tenant(self, tenant: Tenant) -> Tenant:
        if tenant.id in self._tenants or any(t.name == tenant.name
                                             for t in self._tenants.values()):
            raise ConflictError(f"tenant {tenant.name!r} exists")
        self._tenants[tenant.id] = replace(tenant, created_at=_utc(tenant.created_at
                                                                   or utcnow()))
        return copy.copy(self._tenants[tenant.id])

    @_operation
    async def get_tenant(self, tenant_id: str) -> Tenant | None:
        return copy.copy(self._tenants.get(tenant_id))

    @_operation
    async def list_tenants(self) -> list[Tenant]:
        return sorted(self._tenants.values(), key=lambda t: (t.created_at or _EPOCH, t.id))

    @_operation
    async def update_tenant(self, tenant_id: str, *, name: str | None = None,
                            disabled: bool | None = None) -> Tenant | None:
        tenant = self._tenants.get(tenant_id)
        if tenant is None:
            return None
        if name is not None and any(t.name == name and t.id != tenant_id
                                    for t in self._tenants.values()):
            raise ConflictError(f"tenant {name!r} exists")
        self._tenants[tenant_id] = replace(tenant, **_given(name=name, disabled=disabled))
        return copy.copy(self._tenants[tenant_id])

    # -- machines ------------------------------------------------------------------------
    @_operation
    async def create_machine(self, agent_id: str, organization: str = "", site: str = "",
                             tags: Sequence[str] = (), *,
                             tenant_id: str = DEFAULT_TENANT_ID) -> Machine:
        if agent_id in self._machines:
            raise ConflictError(f"machine {agent_id!r} exists")
        now = utcnow()
        machine = Machine(agent_id=agent_id, organization=organization, site=site,
                          tags=tuple(tags), created_at=now, updated_at=now,
                          tenant_id=tenant_id)
        self._machines[agent_id] = machine
        return copy.deepcopy(machine)

    @_operation
    async def get_machine(self, agent_id: str) -> Machine | None:
        return copy.deepcopy(self._live(agent_id))

    @_operation
    async def get_machine_by_id(self, agent_id: str) -> Machine | None:
        return copy.deepcopy(self._machines.get(agent_id))

    @_operation
    async def get_machine_by_uid(self, machine_uid: str) -> Machine | None:
        machine = self._holder_of_uid(machine_uid)
        return copy.deepcopy(machine) if machine and machine.deleted_at is None else None

    @_operation
    async def list_machines(self, filter: MachineFilter | None = None) -> list[Machine]:
        where = filter or MachineFilter()
        found = (m for m in self._machines.values()
                 if m.deleted_at is None and _matches(m, where))
        return _page(found, lambda m: (m.created_at or _EPOCH, m.agent_id), after=where.after,
                     limit=where.limit, newest_first=False)

    @_operation
    async def update_machine(self, agent_id: str, *, organization: str | None = None,
                             site: str | None = None,
                             tags: Sequence[str] | None = None) -> Machine | None:
        machine = self._live(agent_id)
        if machine is None:
            return None
        changes = _given(organization=organization, site=site,
                         tags=None if tags is None else tuple(tags))
        machine = replace(machine, **changes, updated_at=utcnow())
        self._machines[agent_id] = machine
        return copy.deepcopy(machine)

    @_operation
    async def set_machine_status(self, agent_id: str, status: str,
                                 last_seen: datetime | None = None) -> None:
        machine = self._machines.get(agent_id)
        if machine is not None:
            self._machines[agent_id] = replace(
                machine, status=status, last_seen=_utc_or_none(last_seen) or machine.last_seen)

    @_operation
    async def set_machines_offline(self, agent_ids: Collection[str], last_seen: datetime) -> None:
        for agent_id in agent_ids:
            machine = self._machines.get(agent_id)
            if machine is not None:
                self._machines[agent_id] = replace(machine, status="offline",
                                                   last_seen=_utc(last_seen))

    @_operation
    async def set_machines_seen(self, seen: Mapping[str, datetime]) -> None:
        for agent_id, at in seen.items():
            machine = self._machines.get(agent_id)
            if machine is not None:
                self._machines[agent_id] = replace(machine, last_seen=_utc(at))

    @_operation
    async def set_all_machines_offline(self, keep: Collection[str] = ()) -> int:
        online = [m for m in self._machines.values()
                  if m.status != "offline" and m.agent_id not in keep]
        for machine in online:
            self._machines[machine.agent_id] = replace(machine, status="offline")
        return len(online)

    @_operation
    async def soft_delete_machine(self, agent_id: str) -> bool:
        machine = self._live(agent_id)
        if machine is None:
            return False
        now = utcnow()
        self._machines[agent_id] = replace(machine, deleted_at=now, status="offline")
        # A machine purged as compromised must not come back with the key it had.
        for key in list(self._keys.values()):
            if key.agent_id == agent_id and key.revoked_at is None:
                self._keys[key.id] = replace(key, revoked_at=now)
        return True

    @_operation
    async def hard_delete_machine(self, agent_id: str) -> bool:
        self._keys = {i: k for i, k in self._keys.items() if k.agent_id != agent_id}
        return self._machines.pop(agent_id, None) is not None

    @_operation
    async def restore_machines(self) -> RestoreResult:
        live = tuple(m for _, m in sorted(self._machines.items()) if m.deleted_at is None)
        # Keyed: any key ever issued, revoked included (SPEC 5.2).
        keyed = frozenset(k.agent_id for k in self._keys.values())
        return RestoreResult(machines=tuple(_copies(live)), keyed_agent_ids=keyed)

    # -- agent keys --------------------------------------------------------------------------
    @_operation
    async def add_agent_key(self, agent_id: str, key_hash: str, label: str = "") -> AgentKey:
        if not _KEY_HASH.match(key_hash):
            raise ValueError("key_hash must be the lower-case SHA-256 hex digest of the key, "
                             "never the key itself")
        if self._live(agent_id) is None:
            raise NotFoundError(f"no machine {agent_id!r} to issue a key for")
        if any(k.key_hash == key_hash for k in self._keys.values()):
            raise ConflictError("an agent key with this hash exists")
        key = AgentKey(id=str(uuid.uuid4()), agent_id=agent_id, key_hash=key_hash,
                       label=label, created_at=utcnow())
        self._keys[key.id] = key
        return copy.deepcopy(key)

    @_operation
    async def find_agent_key(self, key_hash: str) -> AgentKey | None:
        return copy.deepcopy(next((k for k in self._keys.values()
                                   if k.key_hash == key_hash and k.revoked_at is None), None))

    @_operation
    async def list_agent_keys(self, agent_id: str, *, after: Keyset | None = None,
                              limit: int | None = None) -> list[AgentKey]:
        mine = (k for k in self._keys.values() if k.agent_id == agent_id)
        return _page(mine, lambda k: (k.created_at or _EPOCH, k.id), after=after, limit=limit,
                     newest_first=False)

    @_operation
    async def revoke_agent_key(self, agent_id: str, key_id: str) -> AgentKey | None:
        key = self._keys.get(key_id)
        if key is None or key.agent_id != agent_id:
            return None
        if key.revoked_at is None:
            key = self._keys[key_id] = replace(key, revoked_at=utcnow())
        return copy.deepcopy(key)

    @_operation
    async def touch_agent_key(self, key_id: str) -> None:
        key = self._keys.get(key_id)
        if key is not None:
            self._keys[key_id] = replace(key, last_used_at=utcnow())

    # -- support codes -------------------------------------------------------------------------
    @_operation
    async def create_support_code(self, code: SupportCode) -> SupportCode:
        if code.code in self._codes:
            raise ConflictError("this support code exists")
        stored = replace(code, expires_at=_utc(code.expires_at),
                         created_at=_utc(code.created_at or utcnow()),
                         consumed_at=_utc_or_none(code.consumed_at),
                         cancelled_at=_utc_or_none(code.cancelled_at),
                         tenant_id=code.tenant_id or DEFAULT_TENANT_ID)
        self._codes[code.code] = stored
        return copy.deepcopy(stored)

    @_operation
    async def get_support_code(self, code: str) -> SupportCode | None:
        return copy.deepcopy(self._codes.get(code))

    @_operation
    async def consume_support_code(self, code: str, agent_id: str, session_id: str,
                                   now: datetime) -> bool:
        # Check and set with no await between: exactly one binder gets True.
        now = _utc(now)
        row = self._codes.get(code)
        if (row is None or row.consumed_at is not None or row.cancelled_at is not None
                or row.expires_at <= now):
            return False
        self._codes[code] = replace(row, consumed_at=now, agent_id=agent_id,
                                    session_id=session_id)
        return True

    @_operation
    async def list_support_codes(self, created_by: str | None = None, *,
                                 after: Keyset | None = None, limit: int | None = None,
                                 tenant_id: str | None = None) -> list[SupportCode]:
        codes = (c for c in self._codes.values()
                 if (created_by is None or c.created_by == created_by)
                 and _in_tenant(c.tenant_id, tenant_id))
        return _page(codes, lambda c: (c.created_at or _EPOCH, c.code), after=after,
                     limit=limit, newest_first=True)

    @_operation
    async def cancel_support_code(self, code: str) -> bool:
        row = self._codes.get(code)
        if row is None or row.consumed_at is not None or row.cancelled_at is not None:
            return False
        self._codes[code] = replace(row, cancelled_at=utcnow())
        return True

    # -- sessions --------------------------------------------------------------------------------
    @_operation
    async def create_session(self, session: SessionRecord) -> SessionRecord:
        if session.id in self._sessions:
            raise ConflictError(f"session {session.id!r} exists")
        stored = replace(session, created_at=_utc(session.created_at or utcnow()),
                         ended_at=_utc_or_none(session.ended_at),
                         deleted_at=_utc_or_none(session.deleted_at),
                         tenant_id=session.tenant_id or DEFAULT_TENANT_ID)
        self._sessions[session.id] = stored
        return copy.deepcopy(stored)

    @_operation
    async def update_session(self, session_id: str, *, consent_state: str | None = None,
                             ended_at: datetime | None = None,
                             end_reason: str | None = None) -> None:
        session = self._sessions.get(session_id)
        if session is not None:
            self._sessions[session_id] = replace(session, **_given(
                consent_state=consent_state, ended_at=_utc_or_none(ended_at),
                end_reason=end_reason))

    @_operation
    async def end_sessions(self, session_ids: Collection[str], ended_at: datetime,
                           end_reason: str) -> None:
        for session_id in session_ids:
            session = self._sessions.get(session_id)
            if session is not None:
                self._sessions[session_id] = replace(session, ended_at=_utc(ended_at),
                                                     end_reason=end_reason)

    @_operation
    async def end_open_sessions(self, end_reason: str, ended_at: datetime, *,
                                keep: Collection[str] = (),
                                created_before: datetime | None = None) -> int:
        ended_at = _utc(ended_at)
        before = _utc(created_before) if created_before is not None else None
        open_ones = [s for s in self._sessions.values()
                     if s.ended_at is None and s.id not in keep and (
                         before is None or (s.created_at is not None
                                            and _utc(s.created_at) < before))]
        for session in open_ones:
            self._sessions[session.id] = replace(session, ended_at=ended_at,
                                                 end_reason=end_reason)
        return len(open_ones)

    @_operation
    async def get_session(self, session_id: str) -> SessionRecord | None:
        session = self._sessions.get(session_id)
        return copy.deepcopy(session) if session and session.deleted_at is None else None

    @_operation
    async def list_sessions(self, agent_id: str | None = None, limit: int = 100, *,
                            after: Keyset | None = None,
                            tenant_id: str | None = None) -> list[SessionRecord]:
        found = (s for s in self._sessions.values() if s.deleted_at is None
                 and (agent_id is None or s.agent_id == agent_id)
                 and _in_tenant(s.tenant_id, tenant_id))
        return _page(found, lambda s: (s.created_at or _EPOCH, s.id), after=after, limit=limit,
                     newest_first=True)

    @_operation
    async def soft_delete_session(self, session_id: str) -> bool:
        session = self._sessions.get(session_id)
        if session is None or session.deleted_at is not None:
            return False
        self._sessions[session_id] = replace(session, deleted_at=utcnow())
        return True

    # -- cluster nodes -------------------------------------------------------------------
    @_operation
    async def beat_node(self, node_id: str, on_bus: bool, at: datetime) -> None:
        self._nodes[node_id] = (on_bus, _utc(at))

    @_operation
    async def nodes_on_bus(self, since: datetime) -> set[str]:
        since = _utc(since)
        return {node for node, (on_bus, at) in self._nodes.items() if on_bus and at >= since}

    @_operation
    async def forget_node(self, node_id: str) -> None:
        self._nodes.pop(node_id, None)

    # -- users ---------------------------------------------------------------------------------
    def _add_user(self, user: User) -> User:
        if user.id in self._users or any(u.username == user.username
                                         for u in self._users.values()):
            raise ConflictError(f"user {user.username!r} exists")
        stored = replace(user, role="admin" if user.role == "admin" else "technician",
                         permissions=tuple(sorted(set(user.permissions))),
                         client_access=tuple(sorted(set(user.client_access))),
                         created_at=_utc(user.created_at or utcnow()),
                         tenant_id=user.tenant_id or DEFAULT_TENANT_ID)
        self._users[user.id] = stored
        return copy.deepcopy(stored)

    @_operation
    async def create_user(self, user: User) -> User:
        return self._add_user(user)

    @_operation
    async def create_first_admin(self, user: User) -> bool:
        if self._users:
            return False
        self._add_user(user)
        return True

    @_operation
    async def get_user(self, user_id: str) -> User | None:
        return copy.deepcopy(self._users.get(user_id))

    @_operation
    async def get_user_by_username(self, username: str) -> User | None:
        return copy.deepcopy(next((u for u in self._users.values()
                                   if u.username == username), None))

    @_operation
    async def list_users(self, *, after: Keyset | None = None, limit: int | None = None,
                         tenant_id: str | None = None) -> list[User]:
        found = (u for u in self._users.values() if _in_tenant(u.tenant_id, tenant_id))
        return _page(found, lambda u: (u.created_at or _EPOCH, u.id),
                     after=after, limit=limit, newest_first=False)

    @_operation
    async def update_user(self, user_id: str, *, password_hash: str | None = None,
                          role: str | None = None, disabled: bool | None = None,
                          permissions: Sequence[str] | None = None,
                          client_access: Sequence[str] | None = None) -> User | None:
        user = self._users.get(user_id)
        if user is None:
            return None
        changes = _given(
            password_hash=password_hash, disabled=disabled,
            role=None if role is None else ("admin" if role == "admin" else "technician"),
            permissions=None if permissions is None else tuple(sorted(set(permissions))),
            client_access=None if client_access is None else tuple(sorted(set(client_access))))
        user = self._users[user_id] = replace(user, **changes)
        return copy.deepcopy(user)

    @_operation
    async def delete_user(self, user_id: str) -> bool:
        self._login_addresses = {k: v for k, v in self._login_addresses.items()
                                 if k[0] != user_id}
        self._factors.pop(user_id, None)
        self._totp_steps.pop(user_id, None)
        self._logins = {k: v for k, v in self._logins.items() if v.user_id != user_id}
        self._challenges = {k: v for k, v in self._challenges.items() if v.user_id != user_id}
        self._passkeys = {k: v for k, v in self._passkeys.items() if v.user_id != user_id}
        return self._users.pop(user_id, None) is not None

    @_operation
    async def record_login_address(self, user_id: str, client_ip: str, keep: int) -> None:
        if user_id not in self._users:  # the SQL store's foreign key refuses it alike
            raise ConflictError(f"no user {user_id!r} to record a login address for")
        self._login_addresses[(user_id, client_ip)] = utcnow()
        mine = sorted((ip for uid, ip in self._login_addresses if uid == user_id))
        mine.sort(key=lambda ip: self._login_addresses[(user_id, ip)], reverse=True)
        for ip in mine[max(keep, 0):]:
            del self._login_addresses[(user_id, ip)]

    @_operation
    async def is_login_address(self, user_id: str, client_ip: str) -> bool:
        return (user_id, client_ip) in self._login_addresses

    # -- second factors --------------------------------------------------------------------------
    @_operation
    async def get_second_factors(self, user_id: str) -> SecondFactors:
        return self._factors.get(user_id) or SecondFactors(user_id=user_id)

    def _factors_of(self, user_id: str) -> SecondFactors:
        if user_id not in self._users:  # the SQL store's foreign key refuses it alike
            raise ConflictError(f"no user {user_id!r}")
        return self._factors.get(user_id) or SecondFactors(user_id=user_id)

    @_operation
    async def set_totp(self, user_id: str, secret: str | None,
                       recovery_hashes: Sequence[str] = ()) -> None:
        self._factors[user_id] = replace(self._factors_of(user_id), totp_secret=secret,
                                         recovery_hashes=tuple(recovery_hashes))
        self._totp_steps.pop(user_id, None)

    @_operation
    async def add_login_session(self, session: LoginSession) -> None:
        if session.user_id not in self._users:  # the SQL store's foreign key refuses it alike
            raise ConflictError(f"no user {session.user_id!r}")
        if session.id in self._logins:
            raise ConflictError(f"login session {session.id!r} exists")
        self._logins = {k: v for k, v in self._logins.items()
                        if not (v.user_id == session.user_id
                                and v.expires_at < session.created_at)}
        self._logins[session.id] = session

    @_operation
    async def get_login_session(self, session_id: str) -> LoginSession | None:
        return self._logins.get(session_id)

    @_operation
    async def list_login_sessions(self, user_id: str) -> list[LoginSession]:
        mine = [v for v in self._logins.values() if v.user_id == user_id]
        return sorted(mine, key=lambda v: (v.created_at, v.id), reverse=True)

    @_operation
    async def end_login_sessions(self, user_id: str, session_id: str | None = None) -> int:
        ended = [k for k, v in self._logins.items()
                 if v.user_id == user_id and session_id in (None, k)]
        for key in ended:
            del self._logins[key]
        return len(ended)

    @_operation
    async def use_totp_step(self, user_id: str, step: int) -> bool:
        last = self._totp_steps.get(user_id)
        factors = self._factors.get(user_id)
        if factors is None or factors.totp_secret is None or (last is not None
                                                               and last >= step):
            return False
        self._totp_steps[user_id] = step
        return True

    @_operation
    async def consume_recovery_code(self, user_id: str, code_hash: str) -> bool:
        factors = self._factors.get(user_id)
        if factors is None or code_hash not in factors.recovery_hashes:
            return False
        self._factors[user_id] = replace(factors, recovery_hashes=tuple(
            h for h in factors.recovery_hashes if h != code_hash))
        return True

    @_operation
    async def bump_token_generation(self, user_id: str) -> int:
        factors = self._factors_of(user_id)
        self._factors[user_id] = replace(factors,
                                         token_generation=factors.token_generation + 1)
        return factors.token_generation + 1

    # -- passkeys --------------------------------------------------------------------------------
    @_operation
    async def add_webauthn_challenge(self, challenge: WebAuthnChallenge) -> None:
        if challenge.user_id not in self._users:  # the SQL store's foreign key refuses it alike
            raise ConflictError(f"no user {challenge.user_id!r}")
        if challenge.challenge in self._challenges:
            raise ConflictError("this challenge exists")
        now = utcnow()
        self._challenges = {k: v for k, v in self._challenges.items()
                            if not (v.user_id == challenge.user_id and v.expires_at <= now)}
        self._challenges[challenge.challenge] = challenge

    @_operation
    async def take_webauthn_challenge(self, challenge: str, user_id: str,
                                      purpose: str) -> bool:
        found = self._challenges.get(challenge)
        if found is None or found.user_id != user_id or found.purpose != purpose:
            return False
        del self._challenges[challenge]
        return found.expires_at > utcnow()

    @_operation
    async def add_passkey(self, passkey: Passkey) -> None:
        if passkey.user_id not in self._users:  # the SQL store's foreign key refuses it alike
            raise ConflictError(f"no user {passkey.user_id!r}")
        if passkey.id in self._passkeys or any(
                p.credential_id == passkey.credential_id for p in self._passkeys.values()):
            raise ConflictError("this credential is registered already")
        self._passkeys[passkey.id] = passkey

    @_operation
    async def list_passkeys(self, user_id: str) -> list[Passkey]:
        mine = [p for p in self._passkeys.values() if p.user_id == user_id]
        return sorted(mine, key=lambda p: (p.created_at, p.id))

    @_operation
    async def delete_passkeys(self, user_id: str, passkey_id: str | None = None) -> int:
        gone = [k for k, v in self._passkeys.items()
                if v.user_id == user_id and passkey_id in (None, k)]
        for key in gone:
            del self._passkeys[key]
        return len(gone)

    @_operation
    async def use_passkey(self, passkey_id: str, seen_count: int, new_count: int) -> bool:
        found = self._passkeys.get(passkey_id)
        if found is None or found.sign_count != seen_count:
            return False
        self._passkeys[passkey_id] = replace(found, sign_count=new_count,
                                             last_used_at=utcnow())
        return True

    # -- releases --------------------------------------------------------------------------------
    @_operation
    async def create_release(self, release: Release) -> Release:
        if release.version in self._releases:
            raise ConflictError(f"release {release.version!r} exists")
        stored = replace(release, created_at=_utc(release.created_at or utcnow()),
                         tenant_id=release.tenant_id or DEFAULT_TENANT_ID)
        self._releases[release.version] = stored
        return copy.deepcopy(stored)

    @_operation
    async def get_release(self, version: str) -> Release | None:
        return copy.deepcopy(self._releases.get(version))

    @_operation
    async def list_releases(self, *, after: Keyset | None = None, limit: int | None = None,
                            tenant_id: str | None = None) -> list[Release]:
        found = (r for r in self._releases.values() if tenant_id is None
                 or tenant_of(r.tenant_id) in (DEFAULT_TENANT_ID, tenant_id))
        return _page(found, lambda r: (r.created_at or _EPOCH, r.version),
                     after=after, limit=limit, newest_first=True)

    @_operation
    async def update_release(self, version: str, *, download_url: str | None = None,
                             checksum_sha256: str | None = None, mandatory: bool | None = None,
                             notes: str | None = None) -> Release | None:
        release = self._releases.get(version)
        if release is None:
            return None
        release = self._releases[version] = replace(release, **_given(
            download_url=download_url, checksum_sha256=checksum_sha256, mandatory=mandatory,
            notes=notes))
        return copy.deepcopy(release)

    @_operation
    async def delete_release(self, version: str) -> bool:
        return self._releases.pop(version, None) is not None

    # -- audit -------------------------------------------------------------------------------------
    @_operation
    async def add_event(self, event: AuditEvent) -> None:
        self._append_events([event])

    @_operation
    async def add_events(self, events: Sequence[AuditEvent]) -> None:
        self._append_events(events)

    def _append_events(self, events: Sequence[AuditEvent]) -> None:
        """All or none, as one SQL transaction."""
        try:  # the SQL store keeps the detail as JSON: what JSON cannot hold fails there too
            details = [json.loads(json.dumps(dict(event.detail))) for event in events]
        except (TypeError, ValueError) as error:
            raise StoreError(f"event detail is not JSON: {error}") from None
        for event, detail in zip(events, details, strict=True):
            self._events.append(replace(event, detail=detail, id=len(self._events) + 1,
                                        created_at=_utc(event.created_at or utcnow()),
                                        tenant_id=event.tenant_id or DEFAULT_TENANT_ID))

    @_operation
    async def list_events(self, session_id: str | None = None, agent_id: str | None = None,
                          limit: int = 100, *, after: Keyset | None = None,
                          tenant_id: str | None = None) -> list[AuditEvent]:
        found = (e for e in self._events
                 if (session_id is None or e.session_id == session_id)
                 and (agent_id is None or e.agent_id == agent_id)
                 and _in_tenant(e.tenant_id, tenant_id))
        return _page(found, lambda e: (e.created_at or _EPOCH, e.id or 0), after=after,
                     limit=limit, newest_first=True)

    # -- session recordings --------------------------------------------------------------
    @_operation
    async def add_recording(self, recording: RecordingRecord) -> None:
        if recording.id in self._recordings:
            raise ConflictError(f"recording {recording.id} exists")
        self._recordings[recording.id] = replace(recording,
                                                 started_at=_utc(recording.started_at))

    @_operation
    async def finish_recording(self, recording_id: str, *, ended_at: datetime, state: str,
                               reason: str, segments: int, bytes: int, sha256: str,
                               technicians: Sequence[str] = ()) -> None:
        recording = self._recordings.get(recording_id)
        if recording is not None:
            self._recordings[recording_id] = replace(
                recording, ended_at=_utc(ended_at), state=state, reason=reason,
                segments=segments, bytes=bytes, sha256=sha256, technicians=tuple(technicians))

    @_operation
    async def get_recording(self, recording_id: str) -> RecordingRecord | None:
        recording = self._recordings.get(recording_id)
        return None if recording is None else copy.copy(recording)

    @_operation
    async def list_recordings(self, *, session_id: str | None = None,
                              agent_id: str | None = None, technician: str | None = None,
                              since: datetime | None = None, limit: int = 100,
                              after: Keyset | None = None,
                              tenant_id: str | None = None) -> list[RecordingRecord]:
        found = (r for r in self._recordings.values()
                 if _in_tenant(r.tenant_id, tenant_id)
                 and (session_id is None or r.session_id == session_id)
                 and (agent_id is None or r.agent_id == agent_id)
                 and (technician is None or technician in r.technicians)
                 and (since is None or r.started_at >= _utc(since)))
        return _page(found, lambda r: (r.started_at, r.id), after=after, limit=limit,
                     newest_first=True)

    @_operation
    async def delete_recording(self, recording_id: str) -> bool:
        return self._recordings.pop(recording_id, None) is not None

    @_operation
    async def end_open_recordings(self, reason: str, ended_at: datetime) -> int:
        open_ = [r for r in self._recordings.values() if r.state == "recording"]
        for r in open_:
            self._recordings[r.id] = replace(r, state="incomplete", reason=reason,
                                             ended_at=_utc(ended_at))
        return len(open_)

    # -- webhook delivery log ------------------------------------------------------------
    @_operation
    async def add_webhook_delivery(self, delivery: WebhookDelivery) -> None:
        self._deliveries.append(replace(delivery, id=len(self._deliveries) + 1,
                                        created_at=_utc(delivery.created_at or utcnow())))

    @_operation
    async def list_webhook_deliveries(self, limit: int = 100, *, after: Keyset | None = None,
                                      failed_only: bool = False) -> list[WebhookDelivery]:
        found = (d for d in self._deliveries if not failed_only or d.outcome != "delivered")
        return _page(found, lambda d: (d.created_at or _EPOCH, d.id or 0), after=after,
                     limit=limit, newest_first=True)

    @_operation
    async def prune_webhook_deliveries(self, before: datetime) -> int:
        kept = [d for d in self._deliveries if (d.created_at or _EPOCH) >= _utc(before)]
        gone = len(self._deliveries) - len(kept)
        self._deliveries = kept
        return gone


def _matches(machine: Machine, where: MachineFilter) -> bool:
    """The SQL store's filters: exact organization, site, status and tag; ``text`` a
    case-insensitive substring of the ids, hostname, organization or site."""
    if where.organization is not None and machine.organization != where.organization:
        return False
    if where.site is not None and machine.site != where.site:
        return False
    if where.status is not None and machine.status != where.status:
        return False
    if where.tag is not None and where.tag not in machine.tags:
        return False
    if where.text:
        needle = where.text.lower()
        fields = (machine.agent_id, machine.machine_uid or "", machine.hostname,
                  machine.organization, machine.site)
        if not any(needle in value.lower() for value in fields):
            return False
    if not _in_tenant(machine.tenant_id, where.tenant_id):
        return False
    orgs = where.organizations
    return orgs is None or "*" in orgs or machine.organization in orgs


def _in_tenant(row_tenant: str | None, wanted: str | None) -> bool:
    """The SQL store's tenant filter: ``wanted`` None is any; a row without one is the
    default tenant's."""
    return wanted is None or tenant_of(row_tenant) == wanted


# -- authentication ----------------------------------------------------------------------------


def keyed_identity(agent_id: str, *, key_id: str | None = None,
                   method: str = "static") -> AgentIdentity:
    """A managed machine's identity, as an agent key gives it: authoritative for
    ``agent_id`` (its claimed uid is dropped), persistent, no consent."""
    return AgentIdentity(method=method, agent_id=agent_id, authoritative=True,
                         persistent=True, key_id=key_id or f"key-{agent_id}")


def attended_identity(technician_name: str = "Tess", *, support_code: str | None = None,
                      technician_id: str | None = None,
                      method: str = "static") -> AgentIdentity:
    """An attended session's identity, as a support code gives it: the agent's own claimed
    ``agent_id`` and ``machine_uid`` (filled in by :class:`StaticAuthenticator`), consent
    needed, not persistent. With ``support_code`` the registry consumes that code."""
    return AgentIdentity(method=method, agent_id="", attended=True, persistent=False,
                         support_code=support_code, technician_name=technician_name,
                         technician_id=technician_id)


class StaticAuthenticator(Authenticator):
    """Answers from a fixed table: ``identities`` maps tokens to identities, ``refused``
    maps tokens to the reason :class:`AuthRejected` carries; other tokens are not this
    method's (``None``). An identity with an empty ``agent_id`` takes the credential's
    claimed ``agent_id`` and ``machine_uid``, as support codes and shared keys do.

    ``seen`` lists every credential presented, so a test can tell whether admission
    reached the method at all. Tokens are compared as dict keys, not in constant time:
    this is a double for tests, never an authentication method to deploy.
    """

    def __init__(self, identities: Mapping[str, AgentIdentity] | None = None, *,
                 refused: Mapping[str, str] | None = None) -> None:
        self.identities: dict[str, AgentIdentity] = dict(identities or {})
        self.refused: dict[str, str] = dict(refused or {})
        self.seen: list[AgentCredential] = []

    async def authenticate(self, credential: AgentCredential) -> AgentIdentity | None:
        self.seen.append(credential)
        await anyio.lowlevel.checkpoint()
        if credential.token in self.refused:
            raise AuthRejected(self.refused[credential.token])
        identity = self.identities.get(credential.token)
        if identity is None or identity.agent_id:
            return identity
        return replace(identity, agent_id=credential.agent_id,
                       machine_uid=credential.machine_uid)


def static_auth_plugin(authenticator: Authenticator, *, name: str = "static",
                       order: int = 5) -> tuple[str, object]:
    """``(plugin name, plugin)`` registering ``authenticator`` as the auth method ``name``,
    for ``get_plugin_manager(settings, extra=[...])``. ``order`` 5 puts it before the
    built-in methods (agentkey 10, supportcode 20, sharedkey 90)."""
    method = AuthMethod(name=name, order=order, factory=lambda _context: authenticator)

    class StaticAuthPlugin:
        @hookimpl
        def register_auth_methods(self) -> list[AuthMethod]:
            return [method]

    return f"auth_{name}", StaticAuthPlugin()

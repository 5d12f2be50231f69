"""The contract every storage plugin must meet, as a reusable class of async tests.

Use it from a plugin's tests by subclassing and providing two fixtures::

    from remote_core.testing.store_contract import StoreContract

    class TestMyStore(StoreContract):
        @pytest.fixture
        async def store(self): ...            # a freshly opened, empty Store

        @pytest.fixture
        def break_keyed_query(self, store): ...  # async callable making the
                                                 # keyed-machines query fail for real

Races run on real concurrent connections: twenty binders of one support code,
several rounds, exactly one winner each time.
"""

from __future__ import annotations

import hashlib
import inspect
import secrets
import sys
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest

from ..errors import ConflictError, NotFoundError
from ..interfaces import Store
from ..records import (
    CONSENT_NOT_REQUIRED,
    CONSENT_PENDING,
    DEFAULT_TENANT_ID,
    AuditEvent,
    Keyset,
    LoginSession,
    MachineFilter,
    MachineReport,
    Passkey,
    RecordingRecord,
    Release,
    SessionRecord,
    SigningKey,
    SupportCode,
    Tenant,
    User,
    WebAuthnChallenge,
    WebhookDelivery,
    utcnow,
)

__all__ = ["BINDERS", "RACE_ROUNDS", "StoreContract", "key_hash", "make_code", "make_session",
           "make_user"]

BINDERS = 20
"""Concurrent binders of one support code in the race test."""

RACE_ROUNDS = 5

Breaker = Callable[[], Awaitable[None]]
Fetch = Callable[[Keyset | None, int], Awaitable[list[Any]]]

PAGE = 3
"""Items per page in the paging tests: small, so each list spans several pages."""

SAMPLE_HASH = "$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA"
"""An Argon2id-shaped hash; the store never interprets it."""


def key_hash() -> str:
    """The SHA-256 hex digest of a fresh ``cak_`` key, as the server stores it."""
    return hashlib.sha256(("cak_" + secrets.token_urlsafe(32)).encode()).hexdigest()


def make_code(created_by: str | None = "u1", minutes: int = 60, **extra: Any) -> SupportCode:
    alphabet = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
    text = "-".join("".join(secrets.choice(alphabet) for _ in range(3)) for _ in range(3))
    return SupportCode(code=text, created_by=created_by, technician_name="Tess",
                       expires_at=utcnow() + timedelta(minutes=minutes), **extra)


def make_user(username: str, **extra: Any) -> User:
    return User(id=str(uuid.uuid4()), username=username,
                password_hash=SAMPLE_HASH, **extra)


def make_session(agent_id: str, **extra: Any) -> SessionRecord:
    values: dict[str, Any] = {"is_managed": True, "source": "agentkey",
                              "consent_state": CONSENT_NOT_REQUIRED, **extra}
    return SessionRecord(id=str(uuid.uuid4()), agent_id=agent_id, **values)


class StoreContract:
    """Async tests any :class:`~remote_core.interfaces.Store` must pass."""

    pytestmark = pytest.mark.anyio

    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    def test_the_contract_exercises_every_store_method(self) -> None:
        """A method added to ``Store`` must be added to the contract too."""
        source = inspect.getsource(sys.modules[__name__])
        untested = sorted(name for name in Store.__abstractmethods__
                          if f"store.{name}(" not in source and f"store.{name})" not in source)
        assert untested == []

    # -- lifecycle -------------------------------------------------------------------
    async def test_ping(self, store: Store) -> None:
        assert await store.ping() is True

    async def test_open_again_is_harmless(self, store: Store) -> None:
        await store.create_machine("m-1")
        await store.open()
        assert await store.get_machine("m-1") is not None

    async def test_close_twice_is_harmless(self, store: Store) -> None:
        await store.create_machine("m-1")
        await store.close()
        await store.close()

    async def test_secret_first_value_wins_under_concurrency(self, store: Store) -> None:
        results: list[str] = []

        async def ask(value: str) -> None:
            results.append(await store.get_or_create_secret("jwt", value))

        async with anyio.create_task_group() as tg:
            for i in range(10):
                tg.start_soon(ask, f"value-{i}")
        assert len(set(results)) == 1
        assert await store.get_or_create_secret("jwt", "late") == results[0]
        assert await store.get_or_create_secret("other", "x") == "x"

    # -- the token-signing key ring (T17) -----------------------------------------------
    @staticmethod
    def _key(name: str, ago: float = 0.0) -> SigningKey:
        return SigningKey(kid=f"kid-{name}", secret=f"secret-{name}-" + secrets.token_hex(8),
                          created_at=utcnow() - timedelta(seconds=ago))

    async def test_the_key_ring_is_seeded_once_under_concurrency(self, store: Store) -> None:
        rings: list[list[SigningKey]] = []

        async def seed(n: int) -> None:
            rings.append(await store.signing_keys(self._key(str(n))))

        async with anyio.create_task_group() as tg:
            for n in range(8):
                tg.start_soon(seed, n)
        assert all(ring == rings[0] for ring in rings)
        assert len(rings[0]) == 1 and rings[0][0].verify_until is None
        assert await store.signing_keys(self._key("late")) == rings[0]

    async def test_rotation_retires_the_current_key_and_drops_expired_ones(
            self, store: Store) -> None:
        first = (await store.signing_keys(self._key("a", ago=20)))[0]
        until = utcnow() + timedelta(hours=8)
        ring = await store.rotate_signing_key(self._key("b", ago=10), until)
        assert [k.kid for k in ring] == [first.kid, "kid-b"]
        assert ring[0].secret == first.secret
        assert abs((ring[0].verify_until or until) - until) < timedelta(seconds=1)
        assert ring[0].verify_until is not None and ring[1].verify_until is None
        # "b" retires already expired; the next rotation drops it, "a" stays till its time.
        ring = await store.rotate_signing_key(self._key("c", ago=5),
                                              utcnow() - timedelta(seconds=1))
        ring = await store.rotate_signing_key(self._key("d"), utcnow() + timedelta(hours=1))
        assert [k.kid for k in ring] == [first.kid, "kid-c", "kid-d"]
        assert [k.verify_until is None for k in ring] == [False, False, True]
        assert await store.signing_keys(self._key("e")) == ring

    async def test_a_rotation_that_fails_changes_nothing(self, store: Store) -> None:
        ring = await store.signing_keys(self._key("a", ago=10))
        with pytest.raises(ConflictError):
            await store.rotate_signing_key(ring[0], utcnow() + timedelta(hours=1))
        assert await store.signing_keys(self._key("late")) == ring

    async def test_concurrent_rotations_leave_one_current_key(self, store: Store) -> None:
        await store.signing_keys(self._key("seed", ago=60))
        until = utcnow() + timedelta(hours=8)
        async with anyio.create_task_group() as tg:
            for n in range(6):
                tg.start_soon(store.rotate_signing_key, self._key(str(n)), until)
        ring = await store.signing_keys(self._key("late"))
        assert len(ring) == 7
        assert sum(k.verify_until is None for k in ring) == 1

    # -- tenants -------------------------------------------------------------------------
    async def test_tenants(self, store: Store) -> None:
        (default,) = await store.list_tenants()  # seeded
        assert (default.id, default.disabled) == (DEFAULT_TENANT_ID, False)
        acme = await store.create_tenant(Tenant(id=str(uuid.uuid4()), name="Acme"))
        assert acme.created_at is not None and not acme.disabled
        with pytest.raises(ConflictError):
            await store.create_tenant(Tenant(id=str(uuid.uuid4()), name="Acme"))
        assert [t.id for t in await store.list_tenants()] == [DEFAULT_TENANT_ID, acme.id]
        renamed = await store.update_tenant(acme.id, name="Acme Ltd", disabled=True)
        assert renamed is not None and (renamed.name, renamed.disabled) == ("Acme Ltd", True)
        assert await store.get_tenant(acme.id) == renamed
        assert await store.update_tenant(acme.id) == renamed  # nothing asked, nothing changed
        with pytest.raises(ConflictError):
            await store.update_tenant(acme.id, name="default")
        assert await store.update_tenant("no-such-tenant", name="x") is None
        assert await store.get_tenant("no-such-tenant") is None

    async def test_every_list_keeps_to_a_tenant(self, store: Store) -> None:
        other = (await store.create_tenant(Tenant(id=str(uuid.uuid4()), name="Other"))).id
        mine = await store.create_machine("mine")
        theirs = await store.create_machine("theirs", tenant_id=other)
        assert (mine.tenant_id, theirs.tenant_id) == (DEFAULT_TENANT_ID, other)
        reported = await store.upsert_machine(MachineReport(agent_id="new", tenant_id=other))
        assert reported.tenant_id == other  # a new machine joins the report's tenant
        kept = await store.upsert_machine(MachineReport(agent_id="mine", tenant_id=other))
        assert kept.tenant_id == DEFAULT_TENANT_ID  # a registered machine keeps its own
        assert [m.agent_id for m in await store.list_machines(
            MachineFilter(tenant_id=other))] == ["theirs", "new"]
        assert [m.agent_id for m in await store.list_machines(
            MachineFilter(tenant_id=DEFAULT_TENANT_ID))] == ["mine"]
        await store.create_session(make_session("mine"))
        await store.create_session(make_session("theirs", tenant_id=other))
        assert [r.agent_id for r in await store.list_sessions(tenant_id=other)] == ["theirs"]
        await store.create_support_code(make_code(tenant_id=other))
        assert len(await store.list_support_codes(tenant_id=other)) == 1
        assert await store.list_support_codes(tenant_id=DEFAULT_TENANT_ID) == []
        await store.create_user(make_user("them", tenant_id=other))
        await store.create_user(make_user("us"))
        assert [u.username for u in await store.list_users(tenant_id=other)] == ["them"]
        assert [u.username for u in await store.list_users(tenant_id=DEFAULT_TENANT_ID)
                ] == ["us"]
        await store.add_event(AuditEvent("x.theirs", tenant_id=other))
        await store.add_event(AuditEvent("x.unsaid"))  # no tenant: the default tenant's
        assert [e.kind for e in await store.list_events(tenant_id=other)] == ["x.theirs"]
        assert [e.kind for e in await store.list_events(tenant_id=DEFAULT_TENANT_ID)
                ] == ["x.unsaid"]
        await store.add_recording(RecordingRecord(str(uuid.uuid4()), session_id="s",
                                                  agent_id="theirs", started_at=utcnow(),
                                                  tenant_id=other))
        assert len(await store.list_recordings(tenant_id=other)) == 1
        assert await store.list_recordings(tenant_id=DEFAULT_TENANT_ID) == []
        # releases: the default tenant's are every tenant's channel; a tenant's own are its
        await store.create_release(Release(version="1.0.0", download_url="https://x/1",
                                           checksum_sha256="a" * 64))
        await store.create_release(Release(version="1.1.0", download_url="https://x/2",
                                           checksum_sha256="b" * 64, tenant_id=other))
        assert {r.version for r in await store.list_releases(tenant_id=other)} == {
            "1.0.0", "1.1.0"}
        assert [r.version for r in await store.list_releases(tenant_id=DEFAULT_TENANT_ID)
                ] == ["1.0.0"]
        assert len(await store.list_releases()) == 2

    # -- machines: registration and deduplication (SPEC 5.4) ------------------------------
    async def test_upsert_creates_with_defaults(self, store: Store) -> None:
        machine = await store.upsert_machine(MachineReport(agent_id="a-1", hostname="pc1"))
        assert machine.agent_id == "a-1"
        assert machine.hostname == "pc1"
        assert machine.machine_uid is None
        assert machine.tags == ()
        assert machine.status == "offline"
        assert machine.deleted_at is None
        assert machine.created_at is not None and machine.created_at.tzinfo is not None
        assert await store.get_machine("a-1") == machine

    async def test_upsert_on_uid_merges_agent_ids(self, store: Store) -> None:
        first = await store.upsert_machine(MachineReport(
            agent_id="a-1", machine_uid="uid-1", organization="acme", tags=("x", "y")))
        again = await store.upsert_machine(MachineReport(
            agent_id="a-2", machine_uid="uid-1", hostname="pc", status="online"))
        assert again.agent_id == first.agent_id == "a-1"
        assert (again.organization, again.tags, again.hostname, again.status) == (
            "acme", ("x", "y"), "pc", "online")
        assert await store.get_machine("a-2") is None
        assert [m.agent_id for m in await store.list_machines()] == ["a-1"]

    async def test_upsert_on_agent_id_keeps_unreported_fields(self, store: Store) -> None:
        await store.upsert_machine(MachineReport(agent_id="a-1", organization="acme",
                                                 site="hq", is_elevated=True))
        again = await store.upsert_machine(MachineReport(agent_id="a-1", agent_version="2.0"))
        assert (again.organization, again.site, again.is_elevated, again.agent_version) == (
            "acme", "hq", True, "2.0")

    async def test_a_machine_keeps_the_plugin_set_its_agent_last_reported(
            self, store: Store) -> None:
        created = await store.upsert_machine(MachineReport(agent_id="a-1"))
        assert created.plugins == ()
        await store.upsert_machine(MachineReport(
            agent_id="a-1", plugins=("codec_raw_zstd 0.1.0", "consent_dialog 0.1.0")))
        kept = await store.upsert_machine(MachineReport(agent_id="a-1", agent_version="2.0"))
        assert kept.plugins == ("codec_raw_zstd 0.1.0", "consent_dialog 0.1.0")
        newer = await store.upsert_machine(MachineReport(
            agent_id="a-1", plugins=("consent_dialog 0.1.1",)))
        assert newer.plugins == ("consent_dialog 0.1.1",)
        assert (await store.get_machine("a-1")) == newer

    async def test_a_report_fills_placement_only_where_the_operator_left_none(
            self, store: Store) -> None:
        await store.create_machine("a-1", "acme", "", ["ops"])
        filled = await store.upsert_machine(MachineReport(
            agent_id="a-1", organization="globex", site="hq", tags=("x",)))
        assert (filled.organization, filled.site, filled.tags) == ("acme", "hq", ("ops",))
        # A uid new to the store moves onto the agent_id's row: that row's placement holds.
        moved = await store.upsert_machine(MachineReport(
            agent_id="a-1", machine_uid="uid-1", organization="globex", site="branch",
            tags=("y",)))
        assert (moved.machine_uid, moved.organization, moved.site, moved.tags) == (
            "uid-1", "acme", "hq", ("ops",))
        # So does the row found through the uid, whatever agent_id reports it.
        again = await store.upsert_machine(MachineReport(
            agent_id="a-2", machine_uid="uid-1", organization="globex", tags=("z",)))
        assert (again.agent_id, again.organization, again.tags) == ("a-1", "acme", ("ops",))

    async def test_agent_id_row_takes_a_newly_reported_uid(self, store: Store) -> None:
        await store.upsert_machine(MachineReport(agent_id="a-1"))
        moved = await store.upsert_machine(MachineReport(agent_id="a-1", machine_uid="uid-9"))
        assert moved.machine_uid == "uid-9"
        by_uid = await store.get_machine_by_uid("uid-9")
        assert by_uid is not None and by_uid.agent_id == "a-1"

    async def test_uid_unique_among_non_null(self, store: Store) -> None:
        for agent in ("a-1", "a-2", "a-3"):
            await store.upsert_machine(MachineReport(agent_id=agent))
        await store.upsert_machine(MachineReport(agent_id="a-4", machine_uid="u-4"))
        await store.upsert_machine(MachineReport(agent_id="a-5", machine_uid="u-5"))
        assert len(await store.list_machines()) == 5

    async def test_concurrent_first_registrations_of_one_uid_make_one_row(
            self, store: Store) -> None:
        async def register(i: int) -> None:
            await store.upsert_machine(MachineReport(agent_id=f"a-{i}", machine_uid="shared"))

        async with anyio.create_task_group() as tg:
            for i in range(10):
                tg.start_soon(register, i)
        machines = await store.list_machines()
        assert len(machines) == 1 and machines[0].machine_uid == "shared"

    async def test_create_machine_preregisters(self, store: Store) -> None:
        machine = await store.create_machine("pre-1", "acme", "hq", ["t1"])
        assert (machine.organization, machine.site, machine.tags) == ("acme", "hq", ("t1",))
        with pytest.raises(ConflictError):
            await store.create_machine("pre-1")

    # -- machines: removal (SPEC 3.3) ---------------------------------------------------------
    async def test_soft_delete_hides_until_reconnect(self, store: Store) -> None:
        await store.upsert_machine(MachineReport(agent_id="a-1", machine_uid="u-1"))
        assert await store.soft_delete_machine("a-1") is True
        assert await store.soft_delete_machine("a-1") is False
        assert await store.get_machine("a-1") is None
        assert await store.get_machine_by_uid("u-1") is None
        assert await store.list_machines() == []
        assert await store.update_machine("a-1", site="x") is None
        hidden = await store.get_machine_by_id("a-1")
        assert hidden is not None and hidden.deleted_at is not None
        revived = await store.upsert_machine(MachineReport(agent_id="a-1", machine_uid="u-1"))
        assert revived.deleted_at is None
        assert await store.get_machine("a-1") is not None

    async def test_soft_delete_revokes_the_machines_keys(self, store: Store) -> None:
        await store.create_machine("a-1")
        await store.create_machine("a-2")
        mine = await store.add_agent_key("a-1", "a" * 64)
        other = await store.add_agent_key("a-2", "b" * 64)
        assert await store.soft_delete_machine("a-1") is True
        assert await store.find_agent_key(mine.key_hash) is None
        [revoked] = await store.list_agent_keys("a-1")
        assert revoked.revoked_at is not None
        assert await store.find_agent_key(other.key_hash) is not None

    async def test_soft_deleted_machine_revived_through_agent_id(self, store: Store) -> None:
        await store.create_machine("a-1")
        await store.soft_delete_machine("a-1")
        assert (await store.upsert_machine(MachineReport(agent_id="a-1"))).deleted_at is None

    async def test_get_machine_by_id_of_unknown_is_none(self, store: Store) -> None:
        assert await store.get_machine_by_id("nobody") is None
        assert await store.get_machine("nobody") is None
        assert await store.get_machine_by_uid("nobody") is None

    async def test_hard_delete_removes_row_and_keys(self, store: Store) -> None:
        await store.create_machine("a-1")
        digest = key_hash()
        await store.add_agent_key("a-1", digest)
        assert await store.hard_delete_machine("a-1") is True
        assert await store.hard_delete_machine("a-1") is False
        assert await store.get_machine_by_id("a-1") is None
        assert await store.find_agent_key(digest) is None
        assert await store.list_agent_keys("a-1") == []

    # -- machines: listing, editing, status ---------------------------------------------------
    async def _fleet(self, store: Store) -> None:
        fleet = [("m-1", "acme", "hq", ("linux", "db")), ("m-2", "acme", "branch", ("win",)),
                 ("m-3", "globex", "hq", ("linux",)), ("m-4", "", "", ())]
        for agent_id, org, site, tags in fleet:
            await store.upsert_machine(MachineReport(
                agent_id=agent_id, organization=org, site=site, tags=tags,
                hostname=f"host-{agent_id}"))
        await store.set_machine_status("m-2", "online")

    async def test_list_filters(self, store: Store) -> None:
        await self._fleet(store)

        async def ids(**where: Any) -> list[str]:
            return [m.agent_id for m in await store.list_machines(MachineFilter(**where))]

        assert await ids() == ["m-1", "m-2", "m-3", "m-4"]
        assert await ids(organization="acme") == ["m-1", "m-2"]
        assert await ids(site="hq") == ["m-1", "m-3"]
        assert await ids(tag="linux") == ["m-1", "m-3"]
        assert await ids(tag="lin") == []
        assert await ids(status="online") == ["m-2"]
        assert await ids(status="offline") == ["m-1", "m-3", "m-4"]
        assert await ids(text="HOST-M-3") == ["m-3"]
        assert await ids(text="glob") == ["m-3"]
        assert await ids(text="%") == []
        assert await ids(organization="acme", tag="win") == ["m-2"]
        first = await store.get_machine("m-1")
        assert first is not None and first.created_at is not None
        assert await ids(limit=2, after=Keyset(first.created_at, "m-1")) == ["m-2", "m-3"]
        assert await store.list_machines(None) == await store.list_machines(MachineFilter())

    async def test_client_access_filter(self, store: Store) -> None:
        await self._fleet(store)

        async def ids(orgs: tuple[str, ...] | None) -> list[str]:
            found = await store.list_machines(MachineFilter(organizations=orgs))
            return [m.agent_id for m in found]

        assert await ids(None) == ["m-1", "m-2", "m-3", "m-4"]
        assert await ids(("*",)) == ["m-1", "m-2", "m-3", "m-4"]
        assert await ids(("globex",)) == ["m-3"]
        assert await ids(("acme", "globex")) == ["m-1", "m-2", "m-3"]
        assert await ids(()) == []

    async def test_update_machine(self, store: Store) -> None:
        await store.upsert_machine(MachineReport(agent_id="a-1", organization="acme",
                                                 site="hq", tags=("a",)))
        changed = await store.update_machine("a-1", site="branch", tags=["b", "c"])
        assert changed is not None
        assert (changed.organization, changed.site, changed.tags) == ("acme", "branch",
                                                                      ("b", "c"))
        cleared = await store.update_machine("a-1", tags=[])
        assert cleared is not None and cleared.tags == ()
        assert await store.update_machine("nobody", site="x") is None

    async def test_status_and_all_offline(self, store: Store) -> None:
        await self._fleet(store)
        seen = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
        await store.set_machine_status("m-1", "online", seen)
        machine = await store.get_machine("m-1")
        assert machine is not None
        assert (machine.status, machine.last_seen) == ("online", seen)
        later = seen + timedelta(minutes=5)
        await store.set_machines_seen({"m-1": later, "nobody": later})
        machine = await store.get_machine("m-1")
        assert machine is not None and (machine.status, machine.last_seen) == ("online", later)
        await store.set_machine_status("m-2", "online", seen)
        assert await store.set_all_machines_offline(keep=["m-2"]) == 1
        assert await store.set_all_machines_offline() == 1
        assert await store.set_all_machines_offline() == 0
        assert {m.status for m in await store.list_machines()} == {"offline"}

    async def test_many_machines_go_offline_in_one_call(self, store: Store) -> None:
        await self._fleet(store)
        seen = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
        for agent_id in ("m-1", "m-2", "m-3"):
            await store.set_machine_status(agent_id, "online", seen)
        gone = seen + timedelta(minutes=1)
        await store.set_machines_offline(["m-1", "m-3", "nobody"], gone)
        await store.set_machines_offline([], gone)
        states = {m.agent_id: (m.status, m.last_seen) for m in await store.list_machines()}
        assert states["m-1"] == states["m-3"] == ("offline", gone)
        assert states["m-2"] == ("online", seen)

    # -- start-up restore (SPEC 5.2) ----------------------------------------------------------
    async def test_restore_returns_live_machines_and_keyed_ids(self, store: Store) -> None:
        await self._fleet(store)
        await store.add_agent_key("m-1", key_hash())
        revoked = await store.add_agent_key("m-3", key_hash())
        await store.revoke_agent_key("m-3", revoked.id)
        await store.soft_delete_machine("m-4")
        restored = await store.restore_machines()
        assert [m.agent_id for m in restored.machines] == ["m-1", "m-2", "m-3"]
        assert {"m-1", "m-3"} <= restored.keyed_agent_ids
        assert "m-2" not in restored.keyed_agent_ids

    async def test_restore_fails_closed(self, store: Store, break_keyed_query: Breaker) -> None:
        await store.create_machine("m-1")
        await store.add_agent_key("m-1", key_hash())
        await break_keyed_query()
        with pytest.raises(Exception) as raised:  # any failure, never a result
            await store.restore_machines()
        assert not isinstance(raised.value, AssertionError)

    # -- agent keys ---------------------------------------------------------------------------
    async def test_agent_keys(self, store: Store) -> None:
        await store.create_machine("a-1")
        digest = key_hash()
        key = await store.add_agent_key("a-1", digest, "laptop")
        assert (key.agent_id, key.key_hash, key.label) == ("a-1", digest, "laptop")
        assert key.revoked_at is None and key.last_used_at is None
        assert await store.find_agent_key(digest) == key
        assert await store.find_agent_key(key_hash()) is None
        other = await store.add_agent_key("a-1", key_hash())
        assert [k.id for k in await store.list_agent_keys("a-1")] == [key.id, other.id]

        await store.touch_agent_key(key.id)
        touched = await store.find_agent_key(digest)
        assert touched is not None and touched.last_used_at is not None

        assert await store.revoke_agent_key("someone-else", key.id) is None
        assert await store.revoke_agent_key("a-1", "no-such-key") is None
        revoked = await store.revoke_agent_key("a-1", key.id)
        assert revoked is not None and revoked.revoked_at is not None
        again = await store.revoke_agent_key("a-1", key.id)
        assert again is not None and again.revoked_at == revoked.revoked_at
        assert await store.find_agent_key(digest) is None
        assert len(await store.list_agent_keys("a-1")) == 2

    async def test_agent_key_needs_a_live_machine_and_a_hash(self, store: Store) -> None:
        with pytest.raises(NotFoundError):
            await store.add_agent_key("nobody", key_hash())
        await store.create_machine("a-1")
        with pytest.raises(ValueError, match="SHA-256"):
            await store.add_agent_key("a-1", "cak_" + secrets.token_urlsafe(32))
        digest = key_hash()
        await store.add_agent_key("a-1", digest)
        with pytest.raises(ConflictError):
            await store.add_agent_key("a-1", digest)

    # -- support codes (SPEC 3.2) ------------------------------------------------------------
    async def test_support_code_lifecycle(self, store: Store) -> None:
        code = await store.create_support_code(make_code())
        assert code.consumed_at is None and code.created_at is not None
        with pytest.raises(ConflictError):
            await store.create_support_code(code)
        assert await store.get_support_code(code.code) == code
        assert await store.get_support_code("AAA-AAA-AAA") is None
        now = utcnow()
        assert await store.consume_support_code(code.code, "a-1", "s-1", now) is True
        assert await store.consume_support_code(code.code, "a-2", "s-2", now) is False
        used = await store.get_support_code(code.code)
        assert used is not None
        assert (used.agent_id, used.session_id, used.consumed_at) == ("a-1", "s-1", now)
        assert await store.cancel_support_code(code.code) is False

    async def test_cancelled_or_expired_code_cannot_be_consumed(self, store: Store) -> None:
        cancelled = await store.create_support_code(make_code())
        assert await store.cancel_support_code(cancelled.code) is True
        assert await store.cancel_support_code(cancelled.code) is False
        assert not await store.consume_support_code(cancelled.code, "a", "s", utcnow())
        expired = await store.create_support_code(make_code(minutes=-1))
        assert not await store.consume_support_code(expired.code, "a", "s", utcnow())
        assert not await store.consume_support_code("ZZZ-ZZZ-ZZZ", "a", "s", utcnow())

    async def test_list_support_codes(self, store: Store) -> None:
        base = utcnow()
        first = await store.create_support_code(make_code("u1", created_at=base))
        second = await store.create_support_code(
            make_code("u2", created_at=base + timedelta(seconds=1)))
        third = await store.create_support_code(
            make_code("u1", created_at=base + timedelta(seconds=2)))
        assert [c.code for c in await store.list_support_codes()] == [
            third.code, second.code, first.code]
        assert [c.code for c in await store.list_support_codes("u1")] == [
            third.code, first.code]

    async def test_one_binder_wins_the_race(self, store: Store) -> None:
        for _ in range(RACE_ROUNDS):
            code = await store.create_support_code(make_code())
            winners = await _bind_concurrently(store, code.code, BINDERS)
            assert len(winners) == 1
            stored = await store.get_support_code(code.code)
            assert stored is not None and stored.agent_id == winners[0]

    # -- sessions ------------------------------------------------------------------------------
    async def test_sessions(self, store: Store) -> None:
        base = utcnow()
        older = await store.create_session(make_session("a-1", created_at=base))
        newer = await store.create_session(make_session(
            "a-1", created_at=base + timedelta(seconds=1), is_managed=False,
            source="supportcode", consent_state=CONSENT_PENDING, technician="Tess",
            session_type=1))
        other = await store.create_session(make_session(
            "a-2", created_at=base + timedelta(seconds=2)))
        assert await store.get_session(newer.id) == newer
        assert (newer.is_managed, newer.technician, newer.session_type) == (False, "Tess", 1)
        assert [s.id for s in await store.list_sessions()] == [other.id, newer.id, older.id]
        assert [s.id for s in await store.list_sessions("a-1")] == [newer.id, older.id]
        assert [s.id for s in await store.list_sessions(limit=1)] == [other.id]

        ended = base + timedelta(minutes=5)
        await store.update_session(newer.id, consent_state="granted")
        await store.update_session(newer.id, ended_at=ended, end_reason="viewer left")
        stored = await store.get_session(newer.id)
        assert stored is not None
        assert (stored.consent_state, stored.ended_at, stored.end_reason) == (
            "granted", ended, "viewer left")

        assert await store.soft_delete_session(newer.id) is True
        assert await store.soft_delete_session(newer.id) is False
        assert await store.get_session(newer.id) is None
        assert [s.id for s in await store.list_sessions("a-1")] == [older.id]
        assert await store.get_session("no-such-session") is None

    async def test_start_up_ends_the_sessions_a_dead_server_left_open(self, store: Store) -> None:
        base = utcnow()
        ended_before = base - timedelta(minutes=1)
        open_one = await store.create_session(make_session("a-1", created_at=base))
        closed = await store.create_session(make_session("a-2", created_at=base))
        await store.update_session(closed.id, ended_at=ended_before, end_reason="goodbye")
        restart = base + timedelta(minutes=1)
        assert await store.end_open_sessions("server restarted", restart) == 1
        assert await store.end_open_sessions("server restarted", restart) == 0
        stored = await store.get_session(open_one.id)
        assert stored is not None and (stored.ended_at, stored.end_reason) == (
            restart, "server restarted")
        kept = await store.get_session(closed.id)
        assert kept is not None and (kept.ended_at, kept.end_reason) == (ended_before, "goodbye")

    async def test_a_cluster_node_ends_only_the_orphans(self, store: Store) -> None:
        base = utcnow()
        live = await store.create_session(make_session("a-1", created_at=base))
        orphan = await store.create_session(make_session("a-2", created_at=base))
        young = await store.create_session(make_session("a-3", created_at=base
                                                        + timedelta(seconds=30)))
        swept = base + timedelta(seconds=10)
        assert await store.end_open_sessions("node lost", swept, keep=[live.id],
                                             created_before=swept) == 1
        ended = {s.id: s.end_reason for s in await store.list_sessions()}
        assert ended == {live.id: None, orphan.id: "node lost", young.id: None}

    async def test_many_sessions_end_in_one_call(self, store: Store) -> None:
        first = await store.create_session(make_session("a-1"))
        second = await store.create_session(make_session("a-2"))
        other = await store.create_session(make_session("a-3"))
        ended = utcnow()
        await store.end_sessions([first.id, second.id, "no-such-session"], ended,
                                 "server shutting down")
        await store.end_sessions([], ended, "nothing")
        stored = {s.id: (s.ended_at, s.end_reason) for s in await store.list_sessions()}
        assert stored[first.id] == stored[second.id] == (ended, "server shutting down")
        assert stored[other.id] == (None, None)

    async def test_a_node_learns_which_of_its_sessions_were_ended(self, store: Store) -> None:
        live = await store.create_session(make_session("a-1"))
        ended = await store.create_session(make_session("a-2"))
        await store.update_session(ended.id, ended_at=utcnow(), end_reason="node lost")
        assert await store.ended_sessions([live.id, ended.id, "no-such-session"]) == {ended.id}
        assert await store.ended_sessions([]) == set()

    # -- cluster nodes -------------------------------------------------------------------------
    async def test_a_cut_off_node_reads_which_nodes_reach_the_bus(self, store: Store) -> None:
        now = utcnow()
        before = now - timedelta(seconds=10)
        await store.beat_node("back", True, before)
        await store.beat_node("back", True, now)  # a later beat replaces the earlier
        await store.beat_node("cut-off", True, before)
        await store.beat_node("cut-off", False, now)
        await store.beat_node("quiet", True, before)
        await store.beat_node("gone", True, now)
        await store.forget_node("gone")
        await store.forget_node("never-beat")
        assert await store.nodes_on_bus(now - timedelta(seconds=5)) == {"back"}
        assert await store.nodes_on_bus(now - timedelta(seconds=20)) == {"back", "quiet"}

    # -- users ---------------------------------------------------------------------------------
    async def test_login_addresses_keep_the_newest_few_per_user(self, store: Store) -> None:
        alice = await store.create_user(make_user("alice"))
        bob = await store.create_user(make_user("bob"))
        for address in ("192.0.2.1", "192.0.2.2", "192.0.2.1", "192.0.2.3"):
            await store.record_login_address(alice.id, address, keep=2)
            await anyio.sleep(0.01)  # distinct login times
        assert await store.is_login_address(alice.id, "192.0.2.1")
        assert await store.is_login_address(alice.id, "192.0.2.3")
        assert not await store.is_login_address(alice.id, "192.0.2.2")  # the oldest, dropped
        assert not await store.is_login_address(bob.id, "192.0.2.1")
        await store.record_login_address(bob.id, "192.0.2.1", keep=2)
        assert await store.delete_user(alice.id)
        assert not await store.is_login_address(alice.id, "192.0.2.1")
        assert await store.is_login_address(bob.id, "192.0.2.1")

    async def test_second_factors_and_token_generations(self, store: Store) -> None:
        alice = await store.create_user(make_user("alice"))
        bob = await store.create_user(make_user("bob"))
        empty = await store.get_second_factors(alice.id)
        assert (empty.totp_secret, empty.recovery_hashes, empty.token_generation) == (
            None, (), 0)
        secret = "JBSWY3DPEHPK3PXP"  # noqa: S105 - a sample TOTP secret
        await store.set_totp(alice.id, secret, ["h1", "h2"])
        got = await store.get_second_factors(alice.id)
        assert got.totp_secret == secret and set(got.recovery_hashes) == {"h1", "h2"}
        assert await store.consume_recovery_code(alice.id, "h1")
        assert not await store.consume_recovery_code(alice.id, "h1")  # once only
        assert not await store.consume_recovery_code(bob.id, "h2")  # another user's
        assert (await store.get_second_factors(alice.id)).recovery_hashes == ("h2",)
        assert await store.use_totp_step(alice.id, 100)
        assert not await store.use_totp_step(alice.id, 100)  # a code works once
        assert not await store.use_totp_step(alice.id, 99)  # nor an older one after it
        assert await store.use_totp_step(alice.id, 101)
        assert not await store.use_totp_step(bob.id, 5)  # bob has no TOTP
        await store.set_totp(alice.id, secret, ["h2"])  # a new enrolment starts afresh
        assert await store.use_totp_step(alice.id, 50)
        assert await store.bump_token_generation(alice.id) == 1
        assert await store.bump_token_generation(alice.id) == 2
        assert (await store.get_second_factors(bob.id)).token_generation == 0
        await store.set_totp(alice.id, None)  # a reset keeps the generation
        got = await store.get_second_factors(alice.id)
        assert (got.totp_secret, got.recovery_hashes, got.token_generation) == (None, (), 2)
        with pytest.raises(ConflictError):
            await store.set_totp("nobody", secret)
        assert await store.delete_user(alice.id)
        assert (await store.get_second_factors(alice.id)).token_generation == 0

    async def test_passkeys_and_their_challenges(self, store: Store) -> None:
        alice = await store.create_user(make_user("alice"))
        bob = await store.create_user(make_user("bob"))
        now = utcnow()
        later = now + timedelta(minutes=5)
        await store.add_webauthn_challenge(WebAuthnChallenge("c-1", alice.id, "login", later))
        await store.add_webauthn_challenge(WebAuthnChallenge("c-2", alice.id, "register",
                                                             later))
        await store.add_webauthn_challenge(WebAuthnChallenge(
            "c-old", alice.id, "login", now - timedelta(seconds=1)))
        with pytest.raises(ConflictError):
            await store.add_webauthn_challenge(WebAuthnChallenge("c-x", "nobody", "login",
                                                                 later))
        assert not await store.take_webauthn_challenge("c-1", bob.id, "login")  # not bob's
        assert not await store.take_webauthn_challenge("c-1", alice.id, "register")
        assert await store.take_webauthn_challenge("c-1", alice.id, "login")
        assert not await store.take_webauthn_challenge("c-1", alice.id, "login")  # once
        assert not await store.take_webauthn_challenge("c-old", alice.id, "login")  # expired
        assert not await store.take_webauthn_challenge("c-3", alice.id, "login")
        await store.add_webauthn_challenge(WebAuthnChallenge("c-3", alice.id, "login", later))
        assert await store.take_webauthn_challenge("c-2", alice.id, "register")

        key = Passkey(id="p-1", user_id=alice.id, credential_id="Y3JlZA", public_key=b"\x01k",
                      sign_count=3, name="laptop", created_at=now,
                      transports=("internal", "hybrid"))
        await store.add_passkey(key)
        await store.add_passkey(replace(key, id="p-2", credential_id="Y3JlZDI",
                                        created_at=now + timedelta(seconds=1)))
        await store.add_passkey(replace(key, id="p-bob", user_id=bob.id, credential_id="Ym9i"))
        with pytest.raises(ConflictError):  # one credential belongs to one account
            await store.add_passkey(replace(key, id="p-3", user_id=bob.id))
        with pytest.raises(ConflictError):
            await store.add_passkey(replace(key, id="p-4", user_id="nobody",
                                            credential_id="bm9ib2R5"))
        listed = await store.list_passkeys(alice.id)
        assert [p.id for p in listed] == ["p-1", "p-2"]
        assert listed[0] == key  # every field round-trips
        assert await store.use_passkey("p-1", 3, 4)
        assert not await store.use_passkey("p-1", 3, 5)  # the counter moved meanwhile
        used = (await store.list_passkeys(alice.id))[0]
        assert used.sign_count == 4 and used.last_used_at is not None
        assert not await store.use_passkey("p-none", 0, 1)
        assert await store.delete_passkeys(bob.id, "p-1") == 0  # not bob's
        assert await store.delete_passkeys(alice.id, "p-1") == 1
        assert [p.id for p in await store.list_passkeys(alice.id)] == ["p-2"]
        await store.add_passkey(replace(key, id="p-5", credential_id="Y3JlZDU"))
        assert await store.delete_passkeys(alice.id) == 2
        assert await store.list_passkeys(alice.id) == []
        assert [p.id for p in await store.list_passkeys(bob.id)] == ["p-bob"]
        assert await store.delete_user(bob.id)  # its passkeys and challenges go with it
        assert await store.list_passkeys(bob.id) == []

    async def test_login_sessions(self, store: Store) -> None:
        alice = await store.create_user(make_user("alice"))
        bob = await store.create_user(make_user("bob"))
        now = utcnow()
        old = LoginSession(id="s-old", user_id=alice.id, created_at=now - timedelta(hours=9),
                           expires_at=now - timedelta(hours=1))
        await store.add_login_session(old)
        first = LoginSession(id="s-1", user_id=alice.id, created_at=now,
                             expires_at=now + timedelta(hours=8), client_ip="192.0.2.1",
                             user_agent="Firefox", methods=("pwd", "otp"))
        await store.add_login_session(first)  # drops alice's expired one
        second = replace(first, id="s-2", created_at=now + timedelta(seconds=1))
        await store.add_login_session(second)
        await store.add_login_session(replace(first, id="s-bob", user_id=bob.id))
        with pytest.raises(ConflictError):
            await store.add_login_session(first)
        assert await store.get_login_session("s-1") == first
        assert await store.get_login_session("s-old") is None
        assert [s.id for s in await store.list_login_sessions(alice.id)] == ["s-2", "s-1"]
        assert await store.end_login_sessions(bob.id, "s-1") == 0  # not bob's
        assert await store.end_login_sessions(alice.id, "s-1") == 1
        assert await store.get_login_session("s-1") is None
        assert await store.end_login_sessions(alice.id) == 1
        assert await store.list_login_sessions(alice.id) == []
        assert await store.delete_user(bob.id)
        assert await store.get_login_session("s-bob") is None

    async def test_users(self, store: Store) -> None:
        alice = await store.create_user(make_user(
            "alice", role="admin", permissions=("view", "control"), client_access=("*",)))
        assert alice.is_admin and alice.permissions == ("control", "view")
        assert alice.client_access == ("*",) and alice.created_at is not None
        with pytest.raises(ConflictError):
            await store.create_user(make_user("alice"))
        bob = await store.create_user(make_user("bob", permissions=("view",)))
        assert await store.get_user(bob.id) == bob
        assert await store.get_user_by_username("bob") == bob
        assert await store.get_user("nobody") is None
        assert await store.get_user_by_username("nobody") is None
        assert [u.username for u in await store.list_users()] == ["alice", "bob"]

        changed = await store.update_user(bob.id, password_hash=SAMPLE_HASH + "x",
                                          disabled=True, permissions=["support_codes", "view"],
                                          client_access=["acme"])
        assert changed is not None
        assert (changed.password_hash, changed.disabled) == (SAMPLE_HASH + "x", True)
        assert changed.permissions == ("support_codes", "view")
        assert changed.client_access == ("acme",)
        kept = await store.update_user(bob.id, role="admin")
        assert kept is not None and kept.is_admin and kept.client_access == ("acme",)
        cleared = await store.update_user(bob.id, permissions=[])
        assert cleared is not None and cleared.permissions == ()
        assert await store.update_user("nobody", disabled=True) is None

        assert await store.delete_user(bob.id) is True
        assert await store.delete_user(bob.id) is False
        assert await store.get_user(bob.id) is None

    async def test_first_admin_is_created_once_under_concurrency(self, store: Store) -> None:
        created: list[str] = []

        async def attempt(i: int) -> None:
            if await store.create_first_admin(make_user(f"admin{i}", role="admin")):
                created.append(f"admin{i}")

        async with anyio.create_task_group() as tg:
            for i in range(10):
                tg.start_soon(attempt, i)
        assert len(created) == 1
        assert [u.username for u in await store.list_users()] == created
        assert await store.create_first_admin(make_user("late", role="admin")) is False

    async def test_no_first_admin_when_users_exist(self, store: Store) -> None:
        await store.create_user(make_user("tech"))
        assert await store.create_first_admin(make_user("admin", role="admin")) is False

    # -- releases ------------------------------------------------------------------------------
    async def test_releases(self, store: Store) -> None:
        digest = hashlib.sha256(b"agent").hexdigest()
        base = utcnow()
        one = await store.create_release(Release(
            "1.0.0", "https://example.org/1.0.0", digest, created_at=base))
        assert (one.mandatory, one.notes) == (False, "")
        with pytest.raises(ConflictError):
            await store.create_release(one)
        two = await store.create_release(Release(
            "1.1.0", "https://example.org/1.1.0", digest, mandatory=True, notes="fixes",
            created_at=base + timedelta(seconds=1)))
        assert await store.get_release("1.1.0") == two
        assert await store.get_release("9.9.9") is None
        assert [r.version for r in await store.list_releases()] == ["1.1.0", "1.0.0"]
        changed = await store.update_release("1.0.0", mandatory=True, notes="urgent")
        assert changed is not None and (changed.mandatory, changed.notes) == (True, "urgent")
        assert changed.download_url == one.download_url
        assert await store.update_release("9.9.9", notes="x") is None
        assert await store.delete_release("1.0.0") is True
        assert await store.delete_release("1.0.0") is False
        assert [r.version for r in await store.list_releases()] == ["1.1.0"]

    # -- audit ---------------------------------------------------------------------------------
    async def test_events(self, store: Store) -> None:
        await store.add_event(AuditEvent("session_opened", session_id="s-1", agent_id="a-1",
                                         detail={"method": "agentkey", "n": 1}))
        await store.add_event(AuditEvent("viewer_joined", session_id="s-1", agent_id="a-1",
                                         actor="tess"))
        await store.add_event(AuditEvent("machine_purged", agent_id="a-2", actor="admin",
                                         target="a-2", client_ip="192.0.2.7"))
        newest = await store.list_events()
        assert [e.kind for e in newest] == ["machine_purged", "viewer_joined", "session_opened"]
        assert newest[0].client_ip == "192.0.2.7" and newest[0].id is not None
        assert newest[2].detail == {"method": "agentkey", "n": 1}
        assert newest[2].created_at is not None and newest[2].created_at.tzinfo is not None
        assert [e.kind for e in await store.list_events(session_id="s-1")] == [
            "viewer_joined", "session_opened"]
        assert [e.kind for e in await store.list_events(agent_id="a-2")] == ["machine_purged"]
        assert len(await store.list_events(limit=2)) == 2

    async def test_many_events_are_added_in_order(self, store: Store) -> None:
        at = utcnow()
        await store.add_events([AuditEvent("session.closed", session_id=f"s-{i}",
                                           agent_id=f"a-{i}", created_at=at,
                                           detail={"reason": "server shutting down"})
                                for i in range(3)])
        await store.add_events([])
        newest = await store.list_events()
        assert [e.session_id for e in newest] == ["s-2", "s-1", "s-0"]
        assert {e.detail["reason"] for e in newest} == {"server shutting down"}


    # -- keyset paging -------------------------------------------------------------------------
    async def test_machines_page_oldest_first(self, store: Store) -> None:
        made = [(await store.create_machine(f"pm-{i:02d}")).agent_id for i in range(8)]
        added = iter(range(100))

        async def fetch(after: Keyset | None, limit: int) -> list[Any]:
            return await store.list_machines(MachineFilter(after=after, limit=limit))

        async def insert() -> None:
            made.append((await store.create_machine(f"pm-new-{next(added)}")).agent_id)

        seen = await _walk(fetch, lambda m: Keyset(m.created_at, m.agent_id), insert)
        # Oldest first: rows inserted meanwhile come after the cursor and are seen too.
        assert [m.agent_id for m in seen] == made

    async def test_agent_keys_page_oldest_first(self, store: Store) -> None:
        await store.create_machine("pk-1")
        made = [(await store.add_agent_key("pk-1", key_hash())).id for _ in range(8)]

        async def fetch(after: Keyset | None, limit: int) -> list[Any]:
            return await store.list_agent_keys("pk-1", after=after, limit=limit)

        async def insert() -> None:
            made.append((await store.add_agent_key("pk-1", key_hash())).id)

        seen = await _walk(fetch, lambda k: Keyset(k.created_at, k.id), insert)
        assert sorted(k.id for k in seen) == sorted(made) and len(seen) == len(made)
        assert [k.created_at for k in seen] == sorted(k.created_at for k in seen)

    async def test_users_page_oldest_first_even_when_created_together(
            self, store: Store) -> None:
        moment = utcnow()
        made = [(await store.create_user(make_user(f"pu{i}", created_at=moment))).id
                for i in range(7)]
        added = iter(range(100))

        async def fetch(after: Keyset | None, limit: int) -> list[Any]:
            return await store.list_users(after=after, limit=limit)

        async def insert() -> None:
            made.append((await store.create_user(make_user(f"pu-new-{next(added)}"))).id)

        seen = await _walk(fetch, lambda u: Keyset(u.created_at, u.id), insert)
        # One creation time: the id orders them.
        assert [u.id for u in seen] == sorted(made[:7]) + made[7:]

    async def test_codes_page_newest_first(self, store: Store) -> None:
        moment = utcnow()
        made = {(await store.create_support_code(make_code(
            "u1", created_at=moment + timedelta(seconds=i // 3)))).code for i in range(8)}

        async def fetch(after: Keyset | None, limit: int) -> list[Any]:
            return await store.list_support_codes("u1", after=after, limit=limit)

        async def insert() -> None:
            await store.create_support_code(make_code("u1", created_at=utcnow()
                                                      + timedelta(minutes=1)))

        seen = await _walk(fetch, lambda c: Keyset(c.created_at, c.code), insert)
        # Newest first: rows inserted meanwhile are newer than the cursor, so not seen.
        assert {c.code for c in seen} == made and len(seen) == len(made)
        keys = [(c.created_at, c.code) for c in seen]
        assert keys == sorted(keys, reverse=True)

    async def test_sessions_page_newest_first(self, store: Store) -> None:
        moment = utcnow()
        made = {(await store.create_session(make_session(
            "ps-1", created_at=moment + timedelta(seconds=i // 4)))).id for i in range(9)}
        await store.create_session(make_session("ps-2", created_at=moment))

        async def fetch(after: Keyset | None, limit: int) -> list[Any]:
            return await store.list_sessions("ps-1", limit, after=after)

        async def insert() -> None:
            await store.create_session(make_session(
                "ps-1", created_at=utcnow() + timedelta(minutes=1)))

        seen = await _walk(fetch, lambda r: Keyset(r.created_at, r.id), insert)
        assert {r.id for r in seen} == made and len(seen) == len(made)
        keys = [(r.created_at, r.id) for r in seen]
        assert keys == sorted(keys, reverse=True)

    async def test_releases_page_newest_first(self, store: Store) -> None:
        digest = hashlib.sha256(b"agent").hexdigest()
        moment = utcnow()
        made = set()
        for i in range(7):
            version = f"0.{i}.0"
            await store.create_release(Release(version, f"https://example.org/{version}",
                                               digest, created_at=moment))
            made.add(version)
        added = iter(range(100))

        async def fetch(after: Keyset | None, limit: int) -> list[Any]:
            return await store.list_releases(after=after, limit=limit)

        async def insert() -> None:
            version = f"9.{next(added)}.0"
            await store.create_release(Release(version, "https://example.org/new", digest))

        seen = await _walk(fetch, lambda r: Keyset(r.created_at, r.version), insert)
        assert [r.version for r in seen] == sorted(made, reverse=True)

    async def test_webhook_deliveries(self, store: Store) -> None:
        moment = utcnow()
        for attempt, outcome, status in ((1, "retrying", 500), (2, "delivered", 200)):
            await store.add_webhook_delivery(WebhookDelivery(
                delivery_id="d-1", target="ticketing", url="https://hooks.example/in",
                event="session.opened", attempt=attempt, outcome=outcome, status_code=status,
                error="HTTP 500" if status == 500 else "",
                created_at=moment + timedelta(seconds=attempt)))
        await store.add_webhook_delivery(WebhookDelivery(
            delivery_id="d-2", target="ticketing", url="https://10.0.0.1/in",
            event="session.closed", attempt=1, outcome="refused",
            error="address 10.0.0.1 is not allowed", created_at=moment + timedelta(seconds=3)))
        newest = await store.list_webhook_deliveries()
        assert [(d.delivery_id, d.attempt, d.outcome) for d in newest] == [
            ("d-2", 1, "refused"), ("d-1", 2, "delivered"), ("d-1", 1, "retrying")]
        assert newest[1].status_code == 200 and newest[1].id is not None
        assert newest[2].error == "HTTP 500" and newest[2].created_at is not None
        assert newest[2].created_at.tzinfo is not None
        failed = await store.list_webhook_deliveries(failed_only=True)
        assert [d.outcome for d in failed] == ["refused", "retrying"]
        page = await store.list_webhook_deliveries(
            limit=1, after=Keyset(newest[0].created_at or moment, newest[0].id or 0))
        assert [d.outcome for d in page] == ["delivered"]
        assert await store.prune_webhook_deliveries(moment + timedelta(seconds=2)) == 1
        assert len(await store.list_webhook_deliveries()) == 2

    async def test_recordings(self, store: Store) -> None:
        moment = utcnow()
        for i, session in enumerate(("rs-1", "rs-1", "rs-2")):
            await store.add_recording(RecordingRecord(
                f"rec-{i}", session_id=session, agent_id="ra-1",
                started_at=moment + timedelta(seconds=i)))
        first = await store.get_recording("rec-0")
        assert first is not None and first.state == "recording" and first.sha256 == ""
        assert first.started_at.tzinfo is not None
        with pytest.raises(ConflictError):
            await store.add_recording(RecordingRecord("rec-0", "rs-9", "ra-9", moment))
        await store.finish_recording("rec-0", ended_at=moment + timedelta(seconds=9),
                                     state="complete", reason="", segments=3, bytes=12345,
                                     sha256="ab" * 32, technicians=("ann", "bo_b%"))
        done = await store.get_recording("rec-0")
        assert done is not None and (done.state, done.segments, done.bytes, done.sha256) == (
            "complete", 3, 12345, "ab" * 32)
        assert done.technicians == ("ann", "bo_b%")
        assert [r.id for r in await store.list_recordings(technician="bo_b%")] == ["rec-0"]
        assert await store.list_recordings(technician="bo") == []  # a whole name, no pattern
        assert await store.list_recordings(technician="bo_bx") == []
        assert [r.id for r in await store.list_recordings(
            since=moment + timedelta(seconds=1))] == ["rec-2", "rec-1"]
        assert done.ended_at is not None
        assert [r.id for r in await store.list_recordings()] == ["rec-2", "rec-1", "rec-0"]
        assert [r.id for r in await store.list_recordings(session_id="rs-1")] == [
            "rec-1", "rec-0"]
        assert [r.id for r in await store.list_recordings(agent_id="ra-2")] == []
        newest = (await store.list_recordings())[0]
        page = await store.list_recordings(limit=1,
                                           after=Keyset(newest.started_at, newest.id))
        assert [r.id for r in page] == ["rec-1"]
        # a server that died left two recording: they end incomplete, the finished one stays
        assert await store.end_open_recordings("the server stopped", moment) == 2
        left = await store.get_recording("rec-2")
        assert left is not None and (left.state, left.reason) == (
            "incomplete", "the server stopped")
        assert (await store.get_recording("rec-0") or first).state == "complete"
        assert await store.get_recording("nope") is None
        assert await store.delete_recording("rec-1") is True
        assert await store.delete_recording("rec-1") is False
        assert [r.id for r in await store.list_recordings(session_id="rs-1")] == ["rec-0"]
        # those started before a moment: the page past (moment, "") newest first
        old = await store.list_recordings(after=Keyset(moment + timedelta(seconds=2), ""))
        assert [r.id for r in old] == ["rec-0"]

    async def test_events_page_newest_first(self, store: Store) -> None:
        moment = utcnow()
        for i in range(8):
            await store.add_event(AuditEvent("paged", agent_id="pe-1", detail={"n": i},
                                             created_at=moment + timedelta(seconds=i // 3)))
        await store.add_event(AuditEvent("paged", agent_id="pe-2", created_at=moment))

        async def fetch(after: Keyset | None, limit: int) -> list[Any]:
            return await store.list_events(agent_id="pe-1", limit=limit, after=after)

        async def insert() -> None:
            await store.add_event(AuditEvent("paged", agent_id="pe-1",
                                             created_at=utcnow() + timedelta(minutes=1)))

        seen = await _walk(fetch, lambda e: Keyset(e.created_at, e.id), insert)
        assert sorted(e.detail["n"] for e in seen) == list(range(8))
        keys = [(e.created_at, e.id) for e in seen]
        assert keys == sorted(keys, reverse=True)


async def _walk(fetch: Fetch, key: Callable[[Any], Keyset],
                insert: Callable[[], Awaitable[None]], inserts: int = 3) -> list[Any]:
    """Every page of a list, ``PAGE`` items each, resumed from the last item's keyset;
    between the first ``inserts`` pages a row is inserted. Fails on an item seen twice."""
    seen: list[Any] = []
    after: Keyset | None = None
    while True:
        page = await fetch(after, PAGE)
        seen.extend(page)
        if len(page) < PAGE:
            break
        after = key(page[-1])
        if inserts:
            await insert()
            inserts -= 1
    ids = [key(item) for item in seen]
    assert len(set(ids)) == len(ids), "an item was listed twice"
    return seen


async def _bind_concurrently(store: Store, code: str, binders: int) -> list[str]:
    """Start ``binders`` consumers of ``code`` at once; return the agent ids that won."""
    winners: list[str] = []
    now = utcnow()

    async def bind(agent_id: str) -> None:
        if await store.consume_support_code(code, agent_id, f"s-{agent_id}", now):
            winners.append(agent_id)

    async with anyio.create_task_group() as tg:
        for i in range(binders):
            tg.start_soon(bind, f"a-{i}")
    return winners

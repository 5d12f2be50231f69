"""The in-memory store meets the store contract the SQL store meets, and fails on demand
like a database outage; the static authenticator answers from its table."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime

import pytest

from remote_core.errors import ConflictError, StoreError
from remote_core.interfaces import Store
from remote_core.plugins import get_plugin_manager
from remote_core.records import AuditEvent, MachineReport
from remote_core.settings import PluginSettings
from remote_core.testing.fakes import (
    MemoryStore,
    StaticAuthenticator,
    attended_identity,
    keyed_identity,
    static_auth_plugin,
)
from remote_core.testing.store_contract import StoreContract, make_session
from remote_core.types import AgentCredential, AuthContext, AuthRejected

pytestmark = pytest.mark.anyio


class _WithoutBatches(MemoryStore):
    """A store that writes one row at a time, as a third-party store written before the
    batch methods does: it inherits :class:`Store`'s defaults for them."""

    end_sessions = Store.end_sessions
    ended_sessions = Store.ended_sessions
    set_machines_offline = Store.set_machines_offline
    add_events = Store.add_events


@pytest.mark.parametrize("test", ["test_many_sessions_end_in_one_call",
                                  "test_a_node_learns_which_of_its_sessions_were_ended",
                                  "test_many_machines_go_offline_in_one_call",
                                  "test_many_events_are_added_in_order"])
async def test_the_batch_methods_defaults_meet_the_contract(test: str) -> None:
    store = _WithoutBatches()
    await store.open()
    try:
        await getattr(StoreContract(), test)(store)
    finally:
        await store.close()


class TestMemoryStoreContract(StoreContract):
    """Every Store method, the races and the fail-closed restore, in memory."""

    @pytest.fixture
    async def store(self) -> AsyncIterator[MemoryStore]:
        store = MemoryStore()
        await store.open()
        yield store
        await store.close()

    @pytest.fixture
    def break_keyed_query(self, store: MemoryStore) -> Callable[[], Awaitable[None]]:
        async def fail() -> None:
            store.down("restore_machines")

        return fail


# -- what the contract leaves to each store ---------------------------------------------------


async def test_an_outage_fails_every_call_until_the_store_is_up() -> None:
    store = MemoryStore()
    await store.create_machine("m-1")
    store.down()
    assert await store.ping() is False
    with pytest.raises(StoreError, match="down"):
        await store.get_machine("m-1")
    with pytest.raises(StoreError):
        await store.add_event(AuditEvent("x"))
    with pytest.raises(StoreError):
        await store.open()
    await store.close()  # harmless, as disposing of a pool is
    store.up()
    assert await store.ping() is True
    assert await store.get_machine("m-1") is not None


async def test_an_outage_of_named_methods_leaves_the_others() -> None:
    store = MemoryStore()
    store.down("add_event", "upsert_machine")
    with pytest.raises(StoreError):
        await store.add_event(AuditEvent("x"))
    assert await store.ping() is True
    assert await store.create_machine("m-1") is not None
    with pytest.raises(ValueError, match="not Store methods: add_events"):
        store.down("add_events")


async def test_reads_are_copies_of_what_is_stored() -> None:
    store = MemoryStore()
    await store.add_event(AuditEvent("x", detail={"nested": {"n": 1}}))
    [first] = await store.list_events()
    first.detail["nested"]["n"] = 2
    [again] = await store.list_events()
    assert again.detail == {"nested": {"n": 1}}
    machine = await store.upsert_machine(MachineReport(agent_id="m-1"))
    assert machine is not await store.get_machine("m-1")


async def test_what_the_sql_store_refuses_is_refused() -> None:
    store = MemoryStore()
    with pytest.raises(StoreError, match="naive"):
        await store.create_session(make_session("a-1", created_at=datetime(2030, 1, 1)))
    with pytest.raises(StoreError, match="JSON"):
        await store.add_event(AuditEvent("x", detail={"when": datetime(2030, 1, 1)}))
    with pytest.raises(ConflictError):
        await store.record_login_address("nobody", "192.0.2.1", keep=2)
    session = await store.create_session(make_session("a-1"))
    with pytest.raises(ConflictError):
        await store.create_session(session)
    assert await store.list_events() == []


# -- the static authenticator -----------------------------------------------------------------


def credential(token: str, agent_id: str = "claimed", machine_uid: str | None = "uid-1"
               ) -> AgentCredential:
    return AgentCredential(token=token, agent_id=agent_id, machine_uid=machine_uid)


async def test_static_authenticator_answers_from_its_table() -> None:
    keyed = keyed_identity("m-1")
    auth = StaticAuthenticator({"cak_one": keyed,
                                "code": attended_identity("Tess", support_code="ABC-DEF-GHJ")},
                               refused={"cak_old": "unknown or revoked agent key"})
    assert await auth.authenticate(credential("cak_one")) == keyed
    assert keyed.authoritative and keyed.key_id == "key-m-1" and not keyed.attended

    attended = await auth.authenticate(credential("code"))
    assert attended is not None
    assert (attended.agent_id, attended.machine_uid, attended.attended, attended.persistent,
            attended.support_code, attended.technician_name) == (
        "claimed", "uid-1", True, False, "ABC-DEF-GHJ", "Tess")

    assert await auth.authenticate(credential("someone else's")) is None
    with pytest.raises(AuthRejected, match="revoked"):
        await auth.authenticate(credential("cak_old"))
    assert [c.token for c in auth.seen] == ["cak_one", "code", "someone else's", "cak_old"]


async def test_static_authenticator_registers_as_an_auth_method() -> None:
    auth = StaticAuthenticator({"t": keyed_identity("m-1")})
    plugins = get_plugin_manager(PluginSettings(plugins=()), extra=[static_auth_plugin(auth)])
    [method] = plugins.auth_methods()
    assert (method.name, method.order, method.issue_key) == ("static", 5, None)
    assert "auth_static" in plugins.names()
    assert method.factory is not None
    assert method.factory(AuthContext(options={}, store=MemoryStore())) is auth

    other = static_auth_plugin(StaticAuthenticator(), name="late", order=95)
    both = get_plugin_manager(PluginSettings(plugins=()),
                              extra=[other, static_auth_plugin(auth)]).auth_methods()
    assert [m.name for m in both] == ["static", "late"]

"""Which machine an agent without a key is, and how few reads that takes (an admission
storm pays them for every agent)."""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any

import pytest
from remote_server.relay.identity import resolve_unkeyed

from remote_core.errors import SessionRefused
from remote_core.records import MachineReport, Tenant, utcnow
from remote_core.testing.fakes import MemoryStore
from remote_core.types import AgentIdentity

pytestmark = pytest.mark.anyio

READS = ("get_machine_by_uid", "get_machine_by_id", "list_agent_keys")


class CountingStore(MemoryStore):
    """A MemoryStore that counts the reads identity makes."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: Counter[str] = Counter()

    def __getattribute__(self, name: str) -> Any:
        if name in READS:
            object.__getattribute__(self, "reads")[name] += 1
        return object.__getattribute__(self, name)


def _agent(agent_id: str = "claimed", uid: str | None = "uid-1") -> AgentIdentity:
    return AgentIdentity(method="shared_key", agent_id=agent_id, machine_uid=uid)


async def test_a_returning_machine_found_by_its_uid_costs_two_reads() -> None:
    store = CountingStore()
    await store.upsert_machine(MachineReport(agent_id="m-1", machine_uid="uid-1"))
    store.reads.clear()
    assert await resolve_unkeyed(store, {}, _agent()) == ("m-1", "uid-1")
    assert store.reads == Counter(get_machine_by_uid=1, list_agent_keys=1)


async def test_a_machine_the_uid_index_knows_costs_two_reads() -> None:
    store = CountingStore()
    await store.upsert_machine(MachineReport(agent_id="m-1", machine_uid="uid-1"))
    store.reads.clear()
    assert await resolve_unkeyed(store, {"uid-1": "m-1"}, _agent()) == ("m-1", "uid-1")
    assert store.reads == Counter(list_agent_keys=1, get_machine_by_id=1)


async def test_a_keyed_machines_uid_is_ignored_and_its_id_refused() -> None:
    store = CountingStore()
    await store.upsert_machine(MachineReport(agent_id="keyed", machine_uid="uid-1"))
    await store.add_agent_key("keyed", hashlib.sha256(b"cak_key").hexdigest())
    assert await resolve_unkeyed(store, {}, _agent()) == ("claimed", None)
    with pytest.raises(SessionRefused, match="has an agent key"):
        await resolve_unkeyed(store, {}, _agent("keyed"))
    store.reads.clear()
    with pytest.raises(SessionRefused, match="has an agent key"):
        await resolve_unkeyed(store, {"uid-1": "keyed"}, _agent("keyed"))
    assert store.reads == Counter(list_agent_keys=1)  # the one machine read once


async def test_a_machine_of_another_tenant_is_never_joined() -> None:
    store = CountingStore()
    await store.create_tenant(Tenant("t-2", "other", created_at=utcnow()))
    await store.upsert_machine(MachineReport(agent_id="m-1", machine_uid="uid-1",
                                             tenant_id="t-2"))
    agent_id, uid = await resolve_unkeyed(store, {}, _agent())
    assert agent_id not in ("m-1", "claimed") and uid is None

"""cak_ keys against a real SQLite store (SPEC 5.2)."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import AsyncIterator

import pytest
from remote_auth_agentkey import AgentKeyAuthenticator, generate_agent_key, hash_agent_key
from remote_store_sql import make_store

from remote_core.interfaces import Store
from remote_core.types import AgentCredential, AuthContext, AuthRejected

pytestmark = pytest.mark.anyio


@pytest.fixture
async def store(tmp_path) -> AsyncIterator[Store]:
    store = make_store(f"sqlite:///{tmp_path / 'keys.db'}")
    await store.open()
    yield store
    await store.close()


def test_keys_carry_256_random_bits_and_are_stored_as_sha256() -> None:
    plain, digest = generate_agent_key()
    assert plain.startswith("cak_") and len(plain) == 4 + 43  # 32 bytes, URL-safe base64
    assert digest == hashlib.sha256(plain.encode()).hexdigest() == hash_agent_key(plain)
    assert len({generate_agent_key()[0] for _ in range(100)}) == 100


async def test_a_key_authenticates_as_its_machine_until_revoked(store: Store) -> None:
    machine = await store.create_machine(str(uuid.uuid4()))
    plain, digest = generate_agent_key()
    key = await store.add_agent_key(machine.agent_id, digest)
    auth = AgentKeyAuthenticator(AuthContext({}, store))
    identity = await auth.authenticate(AgentCredential(plain, agent_id="claimed",
                                                       machine_uid="uid-claimed"))
    assert identity is not None
    assert (identity.agent_id, identity.machine_uid, identity.authoritative, identity.key_id) == (
        machine.agent_id, None, True, key.id)
    assert (await store.list_agent_keys(machine.agent_id))[0].last_used_at is not None
    await store.revoke_agent_key(machine.agent_id, key.id)
    with pytest.raises(AuthRejected, match="unknown or revoked agent key"):
        await auth.authenticate(AgentCredential(plain, agent_id=""))


async def test_unknown_keys_are_refused_and_other_credentials_ignored(store: Store) -> None:
    auth = AgentKeyAuthenticator(AuthContext({}, store))
    with pytest.raises(AuthRejected):
        await auth.authenticate(AgentCredential(generate_agent_key()[0], agent_id=""))
    assert await auth.authenticate(AgentCredential("ABC-DEF-GHJ", agent_id="")) is None

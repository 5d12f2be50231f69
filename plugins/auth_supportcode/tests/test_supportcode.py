"""Support codes against a real SQLite store: checked, never consumed here (SPEC 3.2)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from remote_auth_supportcode import SupportCodeAuthenticator
from remote_store_sql import make_store

from remote_core.interfaces import Store
from remote_core.records import SupportCode, User, utcnow
from remote_core.supportcode import generate_support_code
from remote_core.types import AgentCredential, AuthContext, AuthRejected

pytestmark = pytest.mark.anyio


@pytest.fixture
async def store(tmp_path) -> AsyncIterator[Store]:
    store = make_store(f"sqlite:///{tmp_path / 'codes.db'}")
    await store.open()
    yield store
    await store.close()


async def new_code(store: Store, *, lifetime: timedelta = timedelta(hours=1)) -> str:
    user = await store.create_user(User(id=str(uuid.uuid4()), username=f"tech-{uuid.uuid4()}",
                                        password_hash="x", permissions=("view",)))
    code = generate_support_code()
    await store.create_support_code(SupportCode(code=code, created_by=user.id,
                                                technician_name="Old Name",
                                                expires_at=utcnow() + lifetime))
    return code


def auth(store: Store) -> SupportCodeAuthenticator:
    return SupportCodeAuthenticator(AuthContext({}, store))


async def test_a_valid_code_is_an_attended_identity_and_stays_unconsumed(store: Store) -> None:
    code = await new_code(store)
    typed = code.lower().replace("-", " ")
    identity = await auth(store).authenticate(AgentCredential(typed, agent_id="a-1",
                                                              machine_uid="u-1"))
    assert identity is not None
    assert (identity.support_code, identity.attended, identity.persistent) == (code, True, False)
    assert identity.technician_name.startswith("tech-")  # the creator's username
    assert (identity.agent_id, identity.machine_uid) == ("a-1", "u-1")
    assert (await store.get_support_code(code)).consumed_at is None


async def test_used_expired_and_cancelled_codes_are_refused(store: Store) -> None:
    used = await new_code(store)
    assert await store.consume_support_code(used, "a-1", str(uuid.uuid4()), utcnow())
    with pytest.raises(AuthRejected, match="support code already used"):
        await auth(store).authenticate(AgentCredential(used, agent_id="a-2"))
    expired = await new_code(store, lifetime=timedelta(seconds=-1))
    cancelled = await new_code(store)
    await store.cancel_support_code(cancelled)
    for code in (expired, cancelled, "ABC-DEF-GHJ"):
        with pytest.raises(AuthRejected, match="unknown or expired support code"):
            await auth(store).authenticate(AgentCredential(code, agent_id="a-3"))


async def test_other_credentials_are_not_this_methods_business(store: Store) -> None:
    for token in ("cak_abc", "A0C-DEF-GHJ", "hello"):
        assert await auth(store).authenticate(AgentCredential(token, agent_id="a")) is None

"""The deprecated shared key: constant-time, warned on every use, never empty (SPEC 5.2)."""

from __future__ import annotations

import logging

import pytest
from remote_auth_sharedkey import SharedKeyAuthenticator

from remote_core.types import AgentCredential, AuthContext

pytestmark = pytest.mark.anyio


def authenticator(key: str | None) -> SharedKeyAuthenticator:
    options = {} if key is None else {"key": key}
    return SharedKeyAuthenticator(AuthContext(options, store=None))  # type: ignore[arg-type]


async def test_the_configured_key_admits_with_a_warning_every_time(caplog) -> None:
    auth = authenticator("s3cret-shared")
    credential = AgentCredential("s3cret-shared", agent_id="a-1", machine_uid="u-1")
    with caplog.at_level(logging.WARNING):
        for _ in range(2):
            identity = await auth.authenticate(credential)
            assert identity is not None
            assert (identity.agent_id, identity.machine_uid, identity.authoritative) == (
                "a-1", "u-1", False)
    warnings = [r for r in caplog.records if "deprecated shared agent key" in r.message]
    assert len(warnings) == 2
    assert "s3cret-shared" not in caplog.text


@pytest.mark.parametrize("configured", [None, ""])
async def test_an_unset_or_empty_key_never_matches(configured: str | None) -> None:
    assert await authenticator(configured).authenticate(AgentCredential("", agent_id="a")) is None


async def test_other_tokens_are_not_this_methods_business() -> None:
    auth = authenticator("s3cret-shared")
    assert await auth.authenticate(AgentCredential("s3cret-share", agent_id="a")) is None
    assert await auth.authenticate(AgentCredential("cak_x", agent_id="a")) is None

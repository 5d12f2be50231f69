"""The shared limits in Redis behave as the in-process ones do (one contract, two backends)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest
from remote_server.cluster.limits import RedisRateLimiter
from remote_server.web.ratelimit import MemoryRateLimiter, RateLimiter

from remote_core.testing.services import require_service, unique_name

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["memory", "redis"])
async def limiter(request: pytest.FixtureRequest) -> AsyncIterator[RateLimiter]:
    if request.param == "memory":
        yield MemoryRateLimiter()
        return
    require_service("Redis", "127.0.0.1", 6379)
    shared = RedisRateLimiter("redis://127.0.0.1:6379/0", prefix=unique_name("limits") + ":")
    yield shared
    await shared.close()


async def test_a_window_admits_its_limit_then_says_how_long_to_wait(limiter: RateLimiter) -> None:
    assert [await limiter.hit("login", "10.0.0.1", 3, 60) for _ in range(3)] == [None] * 3
    wait = await limiter.hit("login", "10.0.0.1", 3, 60)
    assert wait is not None and 59 < wait <= 60
    assert await limiter.hit("login", "10.0.0.2", 3, 60) is None  # another key


async def test_a_shared_window_opens_again_when_it_has_passed() -> None:
    require_service("Redis", "127.0.0.1", 6379)
    limiter = RedisRateLimiter("redis://127.0.0.1:6379/0", prefix=unique_name("limits") + ":")
    try:
        assert await limiter.hit("code", "k", 1, 0.2) is None
        assert await limiter.hit("code", "k", 1, 0.2) is not None
        await anyio.sleep(0.3)
        assert await limiter.hit("code", "k", 1, 0.2) is None
    finally:
        await limiter.close()


async def test_the_threshold_th_failure_locks_the_key_out(limiter: RateLimiter) -> None:
    results = [await limiter.record_failure("code", "10.0.0.9", 3, 900, 60) for _ in range(3)]
    assert results == [False, False, True]
    locked = await limiter.locked_for("code", "10.0.0.9")
    assert locked is not None and 59 < locked <= 60
    assert await limiter.locked_for("code", "10.0.0.8") is None


async def test_an_unlock_lifts_the_guard_and_forgets_the_failures(limiter: RateLimiter) -> None:
    for _ in range(RateLimiter.ACCOUNT_FAILURES_BEFORE_GUARD):
        await limiter.record_account_failure("alice")
    assert await limiter.account_guard_for("alice") is not None
    assert await limiter.clear_account_guard("alice")
    assert await limiter.account_guard_for("alice") is None
    assert not await limiter.clear_account_guard("alice")  # down already
    for _ in range(RateLimiter.ACCOUNT_FAILURES_BEFORE_GUARD - 1):
        await limiter.record_account_failure("bob")
    assert not await limiter.clear_account_guard("bob")  # counting, not up
    assert not await limiter.record_account_failure("bob")  # the count started again


async def test_attempts_from_many_nodes_share_one_count() -> None:
    require_service("Redis", "127.0.0.1", 6379)
    prefix = unique_name("limits") + ":"
    nodes = [RedisRateLimiter("redis://127.0.0.1:6379/0", prefix=prefix) for _ in range(3)]
    try:
        answers = [await nodes[i % 3].check_login("192.0.2.7") for i in range(10)]
        assert answers[:8] == [None] * 8 and all(a is not None for a in answers[8:])
    finally:
        for node in nodes:
            await node.close()

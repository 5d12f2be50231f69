"""The streamer's wake-up: a set is never lost, a wait ends at its time, and a wait that
returned leaves nothing behind for the next."""

from __future__ import annotations

import anyio
import pytest
from remote_agent.wakeup import Wakeup

pytestmark = pytest.mark.anyio


async def blocks(wakeup: Wakeup) -> bool:
    """Whether a wait with no time limit is still waiting a moment later."""
    with anyio.move_on_after(0.05) as scope:
        await wakeup.wait(None)
    return scope.cancelled_caught


async def test_a_set_while_nobody_waits_ends_the_next_wait_and_only_that_one():
    wakeup = Wakeup()
    wakeup.set()
    wakeup.set()
    await wakeup.wait(None)
    assert await blocks(wakeup)


async def test_a_set_from_another_task_ends_a_wait():
    wakeup = Wakeup()
    woken = []

    async def waiter() -> None:
        await wakeup.wait(None)
        woken.append(True)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(waiter)
            await anyio.wait_all_tasks_blocked()
            assert not woken
            wakeup.set()
    assert woken
    assert await blocks(wakeup)


async def test_a_wait_ends_when_its_time_is_up():
    wakeup = Wakeup()
    with anyio.fail_after(5):
        await wakeup.wait(0.01)
        await wakeup.wait(0)
        await wakeup.wait(-1)
    assert await blocks(wakeup)


async def test_a_cancelled_wait_leaves_it_working():
    wakeup = Wakeup()
    assert await blocks(wakeup)
    wakeup.set()
    with anyio.fail_after(5):
        await wakeup.wait(None)

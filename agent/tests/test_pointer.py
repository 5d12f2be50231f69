"""The pointer watch: polls in its thread, and goes back to the loop only with news."""

from __future__ import annotations

import threading
import time

import anyio
import pytest
from remote_agent.pointer import PointerWatch


class Pointer:
    """A scripted ``InputSink.cursor``: still until moved, counting its polls and the
    threads they ran in."""

    def __init__(self) -> None:
        self.polls = 0
        self.threads: set[int] = set()
        self.move: tuple[int, int] | None = None

    def cursor(self) -> tuple[tuple[int, int] | None, None]:
        self.polls += 1
        self.threads.add(threading.get_ident())
        moved, self.move = self.move, None
        return moved, None


@pytest.mark.anyio
async def test_a_still_pointer_is_polled_off_the_loop_which_hears_only_of_a_move():
    pointer = Pointer()
    watch = PointerWatch(pointer.cursor, moving=0.01, still=0.01, moved_at=lambda: 0.0)
    try:
        async with anyio.create_task_group() as group:
            async def move_later() -> None:
                await anyio.sleep(0.3)
                pointer.move = (5, 6)

            group.start_soon(move_later)
            with anyio.fail_after(5):
                news = await watch.changed(lambda: True, lambda: False)
        assert news == ((5, 6), None)
        assert pointer.polls >= 5  # the still polls stayed in the thread
        assert threading.get_ident() not in pointer.threads
    finally:
        watch.close()


@pytest.mark.anyio
async def test_a_viewer_that_needs_the_pointer_has_it_polled_at_once():
    """``wake`` cuts the still tick short, and a due poll comes back even without news;
    nobody watching, the watch comes back without polling."""
    pointer = Pointer()
    watch = PointerWatch(pointer.cursor, moving=30.0, still=30.0, moved_at=lambda: 0.0)
    try:
        due = False
        async with anyio.create_task_group() as group:
            async def join() -> None:
                nonlocal due
                await anyio.sleep(0.1)
                due = True
                watch.wake()

            group.start_soon(join)
            with anyio.fail_after(5):
                assert await watch.changed(lambda: True, lambda: due) == (None, None)
        assert pointer.polls == 1
        watch.wake()
        with anyio.fail_after(5):
            assert await watch.changed(lambda: False, lambda: True) == (None, None)
        assert pointer.polls == 1
    finally:
        watch.close()


@pytest.mark.anyio
async def test_a_closed_watch_stops_polling_even_when_its_waiter_was_cancelled():
    pointer = Pointer()
    watch = PointerWatch(pointer.cursor, moving=0.01, still=0.01, moved_at=time.monotonic)
    with anyio.move_on_after(0.2):
        await watch.changed(lambda: True, lambda: False)
    watch.close()
    await anyio.sleep(0.1)
    polls = pointer.polls
    await anyio.sleep(0.2)
    assert polls > 0 and pointer.polls == polls

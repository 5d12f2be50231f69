"""The write queue (remote_server/relay/writes.py): nothing lost, order kept, bounded.

The database here is a list behind a switch: while it is down every write
raises :class:`StoreError`, the way the store plugin reports an outage. The
outage with a real PostgreSQL is T53 (tests/security).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import anyio
import pytest
from remote_server.relay.writes import WriteQueue

from remote_core.errors import ConflictError, StoreError

pytestmark = pytest.mark.anyio


class Database:
    def __init__(self) -> None:
        self.down = False
        self.rows: list[str] = []

    def writer(self, value: str):  # type: ignore[no-untyped-def]
        async def write() -> None:
            if self.down:
                raise StoreError("cannot reach the database")
            self.rows.append(value)
        return write


@pytest.fixture
async def queue() -> AsyncIterator[WriteQueue]:
    writes = WriteQueue(base_delay=0.01, max_delay=0.05)
    async with anyio.create_task_group() as group:
        writes.start(group)
        yield writes
        await writes.close(wait=1)


async def test_writes_go_through_at_once_while_the_database_answers(queue: WriteQueue) -> None:
    db = Database()
    await queue.submit("a", "a1", db.writer("a1"))
    assert db.rows == ["a1"] and queue.pending == 0


async def test_an_outage_delays_writes_in_order_per_key_and_loses_none(queue: WriteQueue) -> None:
    db = Database()
    db.down = True
    for value in ("a1", "b1", "a2", "b2", "a3"):
        await queue.submit(value[0], value, db.writer(value))
    assert db.rows == [] and queue.pending == 5
    await anyio.sleep(0.1)
    await queue.submit("c", "c1", db.writer("c1"))  # another key fails too, and waits
    db.down = False
    with anyio.fail_after(5):
        await queue.wait_idle()
    assert sorted(db.rows) == ["a1", "a2", "a3", "b1", "b2", "c1"]
    for key in "ab":
        mine = [r for r in db.rows if r[0] == key]
        assert mine == sorted(mine)
    assert queue.retried > 0
    # Once drained, a write goes straight through again.
    await queue.submit("a", "a4", db.writer("a4"))
    assert db.rows[-1] == "a4"


async def test_a_machines_status_reports_coalesce_to_the_newest(queue: WriteQueue) -> None:
    db = Database()
    db.down = True
    for n in range(10):
        await queue.submit("m", f"status {n}", db.writer(f"status {n}"), coalesce=True)
    await queue.submit("m", "offline", db.writer("offline"))
    assert queue.pending == 3  # the first (maybe being written), the newest, the offline mark
    db.down = False
    with anyio.fail_after(5):
        await queue.wait_idle()
    assert db.rows == ["status 0", "status 9", "offline"]


async def test_past_its_bound_the_queue_drops_the_oldest_and_says_so(
        caplog: pytest.LogCaptureFixture) -> None:
    db = Database()
    db.down = True
    writes = WriteQueue(limit=3, base_delay=0.01, max_delay=0.05)
    with caplog.at_level(logging.ERROR, "remote_server.relay.writes"):
        for n in range(5):
            await writes.submit(f"k{n}", f"write {n}", db.writer(f"w{n}"))
    assert writes.pending == 3 and writes.dropped == 2
    assert [r.getMessage() for r in caplog.records] == [
        "write queue full (3 waiting for the database): dropped write 0; 1 dropped so far",
        "write queue full (3 waiting for the database): dropped write 1; 2 dropped so far"]
    db.down = False
    async with anyio.create_task_group() as group:
        writes.start(group)
        with anyio.fail_after(5):
            await writes.wait_idle()
        await writes.close()
    assert sorted(db.rows) == ["w2", "w3", "w4"]


async def test_a_write_that_cannot_succeed_is_logged_not_retried(
        queue: WriteQueue, caplog: pytest.LogCaptureFixture) -> None:
    async def conflict() -> None:
        raise ConflictError("duplicate")

    with caplog.at_level(logging.ERROR, "remote_server.relay.writes"):
        await queue.submit("x", "a duplicate", conflict)
    assert queue.pending == 0
    assert "could not write a duplicate; not retried" in caplog.text


async def test_shutdown_gives_waiting_writes_a_last_chance_then_counts_the_loss(
        caplog: pytest.LogCaptureFixture) -> None:
    db = Database()
    db.down = True
    writes = WriteQueue(base_delay=0.01, max_delay=0.05)
    with caplog.at_level(logging.ERROR, "remote_server.relay.writes"):
        async with anyio.create_task_group() as group:
            writes.start(group)
            await writes.submit("a", "a1", db.writer("a1"))
            await writes.close(wait=0.2)
    assert "shutting down with 1 writes the database never took" in caplog.text

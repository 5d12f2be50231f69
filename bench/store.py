"""Storage benchmark: upsert machines, list with a filter, restore at start-up.

Runs every driver the store supports on SQLite (a temporary file) and on
PostgreSQL (a scratch database in ``REMOTE_SUPPORT_TEST_POSTGRES_URL``,
default 127.0.0.1:5432), so the default drivers can be chosen by measurement:
an async engine (asyncpg, psycopg async) against a sync engine in worker
threads (pysqlite, psycopg). ``--drivers`` takes any installed driver, e.g.
``sqlite+aiosqlite`` after ``uv pip install aiosqlite``.

    uv run python -m bench.store                 # 10,000 machines
    uv run python -m bench.store --machines 1000 --drivers sqlite+pysqlite
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from remote_store_sql.store import SqlStore
from remote_store_sql.testing import postgres_database, sqlite_database

from bench.report import report
from remote_core.records import MachineFilter, MachineReport

DRIVERS = ("sqlite+pysqlite", "postgresql+asyncpg", "postgresql+psycopg",
           "postgresql+psycopg_async")
CONCURRENCY = 10
"""Simultaneous callers, as from that many agent connections."""

ORGANIZATIONS = 20
TAGS = ("linux", "windows", "macos", "db", "web", "kiosk")


@contextmanager
def scratch_url(driver: str) -> Iterator[str]:
    """A URL of an empty database for ``driver``, removed afterwards."""
    if driver.startswith("sqlite"):
        with tempfile.TemporaryDirectory() as directory:
            yield sqlite_database(Path(directory), "bench.db").with_driver(driver).url
        return
    with postgres_database("bench_store") as database:
        yield database.with_driver(driver).url


def machine_report(i: int) -> MachineReport:
    return MachineReport(
        agent_id=f"agent-{i:06d}", machine_uid=f"uid-{i:06d}", hostname=f"host-{i}",
        os_version="Linux 6.1", organization=f"org-{i % ORGANIZATIONS}", site=f"site-{i % 7}",
        tags=(TAGS[i % len(TAGS)], TAGS[(i // 3) % len(TAGS)]), is_elevated=i % 2 == 0,
        is_persistent=True, status="online", agent_version="1.4.2",
    )


async def concurrently(count: int, call: Callable[[int], Awaitable[Any]]) -> float:
    """Run ``call(0..count-1)`` from ``CONCURRENCY`` workers; return elapsed seconds."""
    queue = iter(range(count))

    async def worker() -> None:
        for i in queue:
            await call(i)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return time.perf_counter() - start


async def best_of(rounds: int, call: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(rounds):
        start = time.perf_counter()
        result = await call()
        best = min(best, time.perf_counter() - start)
    return best, result


async def measure(driver: str, machines: int) -> dict[str, Any]:
    with scratch_url(driver) as url:
        store = SqlStore(url)
        try:
            await store.open()
            upsert_s = await concurrently(machines, lambda i: store.upsert_machine(
                machine_report(i)))
            reconnect_s = await concurrently(machines, lambda i: store.upsert_machine(
                machine_report(i)))
            lookups = min(machines, 5000)
            get_s = await concurrently(lookups, lambda i: store.get_machine(
                f"agent-{i * 7 % machines:06d}"))
            where = MachineFilter(organization="org-3", tag="linux")
            list_s, found = await best_of(5, lambda: store.list_machines(where))
            list_all_s, _ = await best_of(3, store.list_machines)
            restore_s, restored = await best_of(3, store.restore_machines)
            assert len(restored.machines) == machines
        finally:
            await store.close()
    return {
        "driver": driver,
        "mode": "async engine" if store.runner.is_async else "sync engine, threads",
        "machines": machines,
        "upsert new /s": machines / upsert_s,
        "upsert again /s": machines / reconnect_s,
        "get /s": lookups / get_s,
        "list filter ms": list_s * 1000,
        "filter rows": len(found),
        "list all ms": list_all_s * 1000,
        "restore ms": restore_s * 1000,
    }


async def main(machines: int, drivers: list[str]) -> None:
    rows = [await measure(driver, machines) for driver in drivers]
    report("store", rows, title=f"Store: {machines:,} machines, {CONCURRENCY} concurrent callers",
           notes=["upsert: conflict on machine_uid; 'again' = every machine reconnects.",
                  "list filter: organization and tag; list/restore: best of several runs."])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--machines", type=int, default=10_000)
    parser.add_argument("--drivers", default=",".join(DRIVERS),
                        help=f"comma-separated, from {', '.join(DRIVERS)}")
    args = parser.parse_args()
    asyncio.run(main(args.machines, args.drivers.split(",")))

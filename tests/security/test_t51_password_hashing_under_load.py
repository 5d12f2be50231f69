"""T51: a burst of logins neither stalls the relay nor takes the memory.

Argon2id costs 64 MiB and a noticeable time per hash on purpose
(``remote_server.web.users``). Hashed on the event loop, every heartbeat
ack would wait for it; hashed by twenty threads at once, a 2-core box would
need more than a gigabyte. A real server process takes twenty concurrent
logins while a connected agent measures its heartbeat round trips, and its
peak memory (``VmHWM``) is read before and after.
"""

from __future__ import annotations

import statistics
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from argon2 import PasswordHasher
from remote_server.testing.processes import ADMIN_PASSWORD, Api, ServerProcess
from websockets.sync.client import ClientConnection, connect

from remote_core.protocol import pb, wrap

pytestmark = pytest.mark.slow

LOGINS = 20
ARGON2_MIB = 64


@pytest.fixture
def process(tmp_path: Path) -> Iterator[ServerProcess]:
    # Each login speaks from its own address, so the 8/min login limit does not refuse them.
    server = ServerProcess(tmp_path, trusted_proxies="127.0.0.1").start()
    try:
        yield server
    finally:
        server.stop()


def peak_rss_mib(server: ServerProcess) -> float:
    assert server.process is not None
    status = Path(f"/proc/{server.process.pid}/status").read_text()
    line = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def round_trips(ws: ClientConnection, until: threading.Event, minimum: int) -> list[float]:
    """Heartbeat round trips, seconds, until ``until`` is set (and at least ``minimum``)."""
    times: list[float] = []
    n = 0
    while not until.is_set() or len(times) < minimum:
        n += 1
        sent = time.perf_counter()
        ws.send(wrap("heartbeat", pb.Heartbeat(timestamp=n)))
        while True:
            message = pb.Message()
            message.ParseFromString(ws.recv(timeout=30))
            if message.WhichOneof("payload") == "heartbeat_ack":
                break
        times.append(time.perf_counter() - sent)
        time.sleep(0.01)
    return times


def one_hash_seconds() -> float:
    """What one Argon2id hash with the server's parameters costs on this machine now."""
    hasher = PasswordHasher()
    start = time.perf_counter()
    hasher.hash("what-a-login-costs")
    return time.perf_counter() - start


def test_t51_twenty_logins_at_once_leave_the_relay_responsive(process: ServerProcess) -> None:
    api = Api(process)
    agent_id, key = api.machine_with_key()
    url = process.url.replace("http://", "ws://") + "/ws/agent"
    with connect(url, additional_headers={"X-Forwarded-For": "192.0.2.51"}) as ws:
        ws.send(wrap("session_request", pb.SessionRequest(agent_id=agent_id,
                                                          session_token=key)))
        ws.recv(timeout=10)
        idle = threading.Event()
        idle.set()
        baseline = round_trips(ws, idle, 20)
        hwm_before = peak_rss_mib(process)
        done = threading.Event()
        answers: list[int] = []

        def log_in(n: int) -> None:
            r = httpx.post(f"{process.url}/api/auth/login", timeout=120,
                           headers={"X-Forwarded-For": f"198.51.100.{n}"},
                           json={"username": "admin" if n % 2 else f"nobody-{uuid.uuid4()}",
                                 "password": ADMIN_PASSWORD})
            answers.append(r.status_code)

        threads = [threading.Thread(target=log_in, args=(n,)) for n in range(1, LOGINS + 1)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()

        def all_answered() -> None:
            for thread in threads:
                thread.join()
            done.set()

        threading.Thread(target=all_answered).start()
        during = round_trips(ws, done, 20)
        burst = time.perf_counter() - started
    hwm_after = peak_rss_mib(process)
    hash_time = one_hash_seconds()
    api.close()
    assert sorted(answers) == [200] * (LOGINS // 2) + [401] * (LOGINS // 2)
    assert burst > 2 * hash_time, "the logins were not the expensive kind this test is about"
    # Off the event loop, a beat waits for no hash; on it, most beats of the burst wait for
    # half of one or more (10-16 of 20-31 where it was tried). A busy machine's odd stall
    # (a CI neighbour kept one beat waiting 1.1 s once) is one beat, not most.
    assert statistics.median(during) < max(hash_time / 4, 3 * statistics.median(baseline)), (
        statistics.median(during), hash_time)
    waited = [beat for beat in during if beat > hash_time / 2]
    assert len(waited) <= 2, (waited, len(during), hash_time)
    # Hashes run a few at a time, never all twenty: far below twenty times 64 MiB.
    assert hwm_after - hwm_before < LOGINS * ARGON2_MIB / 4, (hwm_before, hwm_after)

"""T36: sockets opened and held without a ``SessionRequest`` are closed in bounded time.

Half-open, unauthenticated state must not pile up (rustdesk-server PR #642;
hyperdht #294). The server here has every timeout shortened together
(``IMPATIENT``: the first message is due within a third of a second), and a
crowd of silent sockets from one address must all be closed within that
bound while a real agent is served as usual. A per-address cap on such
sockets does not exist (README of this suite: T36).
"""

from __future__ import annotations

import time

import anyio
import pytest

from remote_core.protocol import pb
from remote_core.testing.liveserver import LiveServer

from .conftest import IMPATIENT, Admin, Peer

pytestmark = pytest.mark.anyio

CROWD = 200
ONE_ADDRESS = {"X-Forwarded-For": "192.0.2.36"}


async def test_t36_a_crowd_of_silent_sockets_is_closed_within_the_first_message_timeout(
        impatient: LiveServer) -> None:
    admin = Admin(impatient)
    silent: list[Peer] = []
    for n in range(CROWD):
        path = "/ws/agent" if n % 2 else "/ws/viewer"
        silent.append(await Peer.open(impatient, path, headers=ONE_ADDRESS))
    opened = time.monotonic()
    # Meanwhile a real agent connects and is answered.
    agent = await Peer.agent(impatient, admin.keyed_machine()[1])
    await agent.accepted()
    codes: list[int | None] = [None] * CROWD

    async def wait_closed(n: int) -> None:
        codes[n] = (await silent[n].closed(wait=10))[0]

    async with anyio.create_task_group() as group:
        for n in range(CROWD):
            group.start_soon(wait_closed, n)
    took = time.monotonic() - opened
    assert codes == [1008] * CROWD
    assert took < IMPATIENT["first_message_timeout"] + 3, f"{took:.1f} s to close them all"
    await agent.send("heartbeat", pb.Heartbeat(timestamp=1))
    assert (await agent.expect("heartbeat_ack")).client_timestamp == 1

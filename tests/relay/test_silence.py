"""The silence watch: a peer is closed once silent for the heartbeat timeout, no sooner."""

from __future__ import annotations

import anyio
import pytest
from remote_server.relay.link import Link
from remote_server.relay.outbox import Close
from remote_server.relay.silence import SilenceWatch

from remote_core.protocol import CloseCode, Connection, Role, pb


def _link(name: str, last_heard: float) -> Link:
    conn = Connection(Role.SERVER, Role.AGENT, 1 << 20)
    conn.accept(f"session-{name}")
    link = Link(conn, 1 << 20, name)
    link.last_heard = last_heard
    return link


def test_only_the_peers_silent_for_the_timeout_are_closed_and_told_why() -> None:
    watch = SilenceWatch(45.0)
    quiet, chatty = _link("quiet", 100.0), _link("chatty", 140.0)
    just_in_time = _link("edge", 105.0)
    for link in (quiet, chatty, just_in_time):
        watch.watch(link)
    assert watch.sweep(149.9) == [quiet]
    assert quiet.closed and quiet.close_reason == "no message for 45 s (heartbeat timeout)"
    assert not chatty.closed and not just_in_time.closed
    assert watch.sweep(150.0) == [just_in_time]  # silent exactly the timeout
    assert len(watch) == 1 and not chatty.closed


@pytest.mark.anyio
async def test_a_closed_link_is_told_in_a_disconnect_then_closed_with_1008() -> None:
    watch = SilenceWatch(1.5)
    link = _link("gone", 0.0)
    watch.watch(link)
    watch.sweep(2.0)
    farewell = pb.Message.FromString(await link.outbox.get())
    assert farewell.disconnect.reason == "no message for 1.5 s (heartbeat timeout)"
    assert await link.outbox.get() == Close(CloseCode.POLICY_VIOLATION,
                                            "no message for 1.5 s (heartbeat timeout)")


def test_a_forgotten_link_is_never_swept() -> None:
    watch = SilenceWatch(45.0)
    link = _link("left", 0.0)
    watch.watch(link)
    watch.forget(link)
    assert watch.sweep(1000.0) == [] and not link.closed


@pytest.mark.anyio
async def test_the_sweeper_closes_a_silent_peer_within_one_sweep_of_the_timeout() -> None:
    watch = SilenceWatch(0.45)  # shortened 100x from the shipped 45 s; sweeps keep the ratio
    assert watch.every == pytest.approx(0.01)
    link = _link("quiet", anyio.current_time())
    watch.watch(link)
    async with anyio.create_task_group() as group:
        group.start_soon(watch.run)
        with anyio.fail_after(5):
            await link.outbox.closing.wait()
        silent_for = anyio.current_time() - link.last_heard
        group.cancel_scope.cancel()
    assert 0.45 <= silent_for

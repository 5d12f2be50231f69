"""T35: values outside the ranges SPEC 8 gives are not recorded as if they were true."""

from __future__ import annotations

import pytest
from remote_server.testing.liveserver import LiveServer, eventually

from remote_core.protocol import pb

from .conftest import Admin, Peer

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("progress", [101, -1, 2**31 - 1])
async def test_t35_an_update_progress_outside_0_to_100_is_recorded_as_unknown(
        server: LiveServer, admin: Admin, progress: int) -> None:
    _agent_id, key = admin.keyed_machine()
    agent = await Peer.agent(server, key)
    session_id = await agent.accepted()
    await agent.send("update_status", pb.UpdateStatus(
        current_version="1.0.0", state=pb.UPDATE_DOWNLOADING, progress_percent=progress))
    await agent.send("update_status", pb.UpdateStatus(
        current_version="1.0.0", state=pb.UPDATE_DOWNLOADING, progress_percent=40))
    events = await eventually(lambda: len(found := [
        e for e in admin.ok("GET", "/api/events", params={"session_id": session_id})
        if e["kind"] == "agent.update_status"]) == 2 and found)
    assert {e["detail"]["progress"] for e in events} == {None, 40}

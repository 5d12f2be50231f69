"""``ADMIN_RESTART``: the agent process replaces itself and connects again.

The server has no operator endpoint that sends ``ADMIN_RESTART`` (only
uninstall and update are SPEC actions), so a small WebSocket server here
plays the server's part of the wire: accept, then order the restart.
"""

from __future__ import annotations

import anyio
import pytest
from remote_server.testing.processes import AgentProcess
from websockets.asyncio.server import serve

from remote_core.protocol import pb, wrap

pytestmark = [pytest.mark.xvfb, pytest.mark.slow]


@pytest.mark.anyio
async def test_admin_restart_reexecutes_the_agent_which_reconnects(tmp_path, x_display):
    hellos: list[str] = []
    second = anyio.Event()

    async def handler(ws):
        message = pb.Message()
        message.ParseFromString(await ws.recv())
        hellos.append(message.session_request.agent_id)
        await ws.send(wrap("session_response", pb.SessionResponse(success=True,
                                                                  session_id="s1")))
        if len(hellos) == 1:
            await ws.send(wrap("admin_command", pb.AdminCommand(
                command=pb.ADMIN_RESTART, reason="test")))
        else:
            second.set()
        async for _ in ws:  # heartbeats, status, display info
            pass

    async with serve(handler, "127.0.0.1", 0, compression=None) as server:
        port = server.sockets[0].getsockname()[1]
        agent = AgentProcess(tmp_path / "agent", x_display.display, "--server",
                             f"http://127.0.0.1:{port}", "--key", "cak_test")
        try:
            pid = agent.process.pid
            with anyio.fail_after(30):
                await second.wait()
            assert agent.process.poll() is None and agent.process.pid == pid
            assert hellos[0] == hellos[1]  # the same identity after the restart
            assert "restarting" in agent.output()
        finally:
            agent.stop()

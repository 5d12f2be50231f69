"""T52: a support code bound just before the server is killed stays used after the restart.

The in-memory Pending/Connected state dies with the process (SPEC 3.2); single
use must rest on the database's ``consumed_at``, or a replay after a crash
would bind the code again (nodedb ``InMemoryTokenStore``). The agent that
retries gets a clean refusal, not a hang.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from remote_server.testing.processes import Api, ServerProcess
from websockets.sync.client import connect

from remote_core.protocol import pb, wrap

pytestmark = pytest.mark.slow


def present(server: ServerProcess, code: str) -> pb.SessionResponse:
    with connect(server.url.replace("http://", "ws://") + "/ws/agent", open_timeout=10) as ws:
        ws.send(wrap("session_request", pb.SessionRequest(
            agent_id=str(uuid.uuid4()), session_token=code, client_version="1.0.0")))
        while True:
            message = pb.Message()
            message.ParseFromString(ws.recv(timeout=10))
            if message.WhichOneof("payload") == "session_response":
                return message.session_response


def test_t52_a_code_bound_before_a_sigkill_is_used_after_the_restart(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path).start()
    try:
        api = Api(server)
        code = api.support_code()
        spare = api.support_code()
        api.close()
        assert present(server, code).success
        assert server.process is not None
        server.process.kill()  # no shutdown, no goodbye: the in-memory state is simply gone
        server.process.wait(10)
        server.start()
        retry = present(server, code)
        assert not retry.success and retry.error == "support code already used"
        api = Api(server)
        assert api.post("/api/codes/validate", json={"code": code}).status_code == 404
        statuses = {c["code"]: c["status"] for c in api.get("/api/codes").json()}
        assert statuses[code] != "pending" and statuses[spare] == "pending"
        api.close()
        assert present(server, spare).success, "an unused code survives the crash unused"
    finally:
        server.stop()

"""T25: no credential a client presents reaches the server's log or the audit log.

A real ``remote-support serve`` process with its own logging (uvicorn's
access lines included) is sent every credential there is, accepted and
refused, in ``SessionRequest`` where they belong and, as careless clients do
(Abilityai/trinity #550), in the URL of the WebSocket upgrade, where uvicorn
logs the path with its query string also on the 403 path.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import httpx
import pytest
from remote_server.testing.processes import Api, ServerProcess
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect

from remote_core.protocol import pb, wrap

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = ServerProcess(tmp_path_factory.mktemp("t25")).start()
    try:
        yield server
    finally:
        server.stop()



def handshake(ws: ClientConnection, token: str, agent_id: str = "") -> bool:
    """Send ``SessionRequest``; True when the server accepts it."""
    ws.send(wrap("session_request", pb.SessionRequest(agent_id=agent_id, session_token=token)))
    while True:
        message = pb.Message()
        message.ParseFromString(ws.recv(timeout=10))
        if message.WhichOneof("payload") == "session_response":
            return bool(message.session_response.success)


def test_t25_no_credential_reaches_a_log(process: ServerProcess) -> None:
    api = Api(process)
    agent_id, key = api.machine_with_key()
    code = api.support_code()
    login_token = api.headers["Authorization"].split(" ", 1)[1]
    unknown = {"wrong key": "cak_" + uuid.uuid4().hex * 2, "wrong code": "ZZZ-ZZZ-Z22"}
    with connect(process.ws_url("/ws/agent")) as agent:
        assert handshake(agent, key, agent_id)
        session_id = api.live_session(agent_id)["id"]
        viewer_token = api.viewer_token(session_id)
        secrets = {"agent key": key, "support code": code, "login token": login_token,
                   "viewer token": viewer_token, **unknown}
        # Where credentials belong: accepted and refused ones alike.
        with connect(process.ws_url("/ws/viewer")) as viewer:
            assert handshake(viewer, viewer_token)
        for token in (code, *unknown.values(), login_token, viewer_token):
            with connect(process.ws_url("/ws/agent")) as other:
                handshake(other, token, str(uuid.uuid4()))
        with connect(process.ws_url("/ws/viewer")) as viewer:
            assert not handshake(viewer, login_token)
        # Where they do not belong: the URL, on an upgrade that is refused and one that is not.
        for token in secrets.values():
            target = f"/ws/viewer?session_id={session_id}&token={token}"
            with pytest.raises(InvalidStatus):
                connect(process.ws_url(target), origin="https://evil.example")
            with connect(process.ws_url(f"/ws/agent?key={token}")) as other:
                assert not handshake(other, "")
            httpx.get(f"{process.url}/api/version?token={token}", timeout=10)
    events = api.get("/api/events", params={"limit": 500}).text
    time.sleep(0.5)  # the server's last lines reach its log file
    log = process.log.read_text()
    assert "WebSocket /ws/agent" in log, "the access lines this test is about are logged"
    for name, secret in secrets.items():
        assert secret not in log, f"the {name} is in the server log"
        assert secret not in events, f"the {name} is in the audit log"
    assert code[-3:] in events, "codes are audited masked, enough to tell them apart"
    api.close()


def test_t25_a_token_in_the_url_is_never_taken_for_one(process: ServerProcess) -> None:
    """The server reads credentials from the first message only: a URL token opens nothing."""
    api = Api(process)
    agent_id, key = api.machine_with_key()
    with connect(process.ws_url("/ws/agent")) as agent:
        assert handshake(agent, key, agent_id)
        session_id = api.live_session(agent_id)["id"]
        token = api.viewer_token(session_id)
        with connect(process.ws_url(f"/ws/viewer?session_id={session_id}&token={token}")) as ws:
            assert not handshake(ws, "")
    api.close()

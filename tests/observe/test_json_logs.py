"""A full session through a real server logging JSON at debug level: every line is one JSON
object, the lines carry their context, and no credential appears in any of them.

Login (and a wrong password), a support code, an attended agent that uses it and whose
user consents, a viewer, a keyed agent, and credentials that are refused: the log of
all of it is scanned for each secret the test handled, and for anything shaped like an
agent key or a JWT.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

import httpx
import pytest
from remote_server.testing.processes import ADMIN_PASSWORD, Api, ServerProcess, next_message
from websockets.sync.client import ClientConnection, connect

from remote_core.protocol import pb, wrap

pytestmark = pytest.mark.slow

AGENT_KEY_SHAPE = re.compile(r"cak_[A-Za-z0-9_-]{8,}")
JWT_SHAPE = re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")


def hex_dumps(secret: str) -> tuple[str, str]:
    """The first and last six bytes of ``secret`` as a frame dump shows bytes (``2d 39``)."""
    raw = secret.encode()
    return (" ".join(f"{b:02x}" for b in raw[:6]), " ".join(f"{b:02x}" for b in raw[-6:]))


def leaks(lines: Iterable[str], secrets: dict[str, str]) -> list[str]:
    """What is wrong with ``lines``: one that is not a JSON object, a secret in one, or
    something shaped like an agent key or a JWT."""
    found = []
    for number, line in enumerate(lines, 1):
        try:
            parsed = json.loads(line)
        except ValueError:
            found.append(f"line {number} is not JSON: {line[:200]}")
            continue
        if not isinstance(parsed, dict):
            found.append(f"line {number} is not a JSON object: {line[:200]}")
        for name, secret in secrets.items():
            if secret in line or any(dump in line for dump in hex_dumps(secret)):
                found.append(f"line {number} holds the {name}: {line[:200]}")
        for shape in (AGENT_KEY_SHAPE, JWT_SHAPE):
            if shape.search(line):
                found.append(f"line {number} holds a credential-shaped {shape.pattern}: "
                             f"{line[:200]}")
    return found


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path_factory.mktemp("jsonlogs"), log_format="json",
                            log_level="debug").start()
    try:
        yield process
    finally:
        process.stop()




def handshake(ws: ClientConnection, token: str, agent_id: str = "") -> pb.SessionResponse:
    ws.send(wrap("session_request", pb.SessionRequest(agent_id=agent_id, session_token=token)))
    return next_message(ws, "session_response").session_response


def test_a_full_session_logs_json_lines_without_a_secret(server: ServerProcess) -> None:
    wrong_password = "wrong-password-" + uuid.uuid4().hex
    assert httpx.post(f"{server.url}/api/auth/login", timeout=10, json={
        "username": "admin", "password": wrong_password}).status_code == 401
    api = Api(server)
    login_token = api.headers["Authorization"].split(" ", 1)[1]
    code = api.support_code()
    agent_id, key = api.machine_with_key()
    wrong_key = "cak_" + uuid.uuid4().hex * 2
    with connect(server.ws_url("/ws/agent")) as attended:
        assert handshake(attended, code, str(uuid.uuid4())).success
        asked = next_message(attended, "consent_request").consent_request
        attended.send(wrap("consent_response", pb.ConsentResponse(
            session_id=asked.session_id, granted=True)))
        session_id = api.live_session(consent="granted")["id"]
        viewer_token = api.viewer_token(session_id)
        with connect(server.ws_url("/ws/viewer")) as viewer:
            assert handshake(viewer, viewer_token).success
            viewer.send(wrap("heartbeat", pb.Heartbeat(timestamp=1)))
            next_message(viewer, "heartbeat_ack")
        with connect(server.ws_url("/ws/agent")) as keyed:
            assert handshake(keyed, key, agent_id).success
        with connect(server.ws_url("/ws/agent")) as refused:
            assert not handshake(refused, wrong_key, agent_id).success
        with connect(server.ws_url("/ws/viewer")) as refused:
            assert not handshake(refused, login_token).success
    assert api.get("/api/auth/me").status_code == 200
    api.close()
    time.sleep(0.5)  # the server's last lines reach its log file
    lines = server.log.read_text().splitlines()
    secrets = {"admin password": ADMIN_PASSWORD, "wrong password": wrong_password,
               "login token": login_token, "viewer token": viewer_token, "agent key": key,
               "wrong agent key": wrong_key, "support code": code,
               "support code, unformatted": code.replace("-", "")}
    assert not leaks(lines, secrets), "\n".join(leaks(lines, secrets))
    parsed = [json.loads(line) for line in lines]
    assert any(line.get("level") == "debug" for line in parsed), "logged at debug level"
    assert any(line.get("session_id") == session_id and line.get("agent_id")
               for line in parsed), "the relay's lines name their session and agent"
    assert any(line.get("request_id") for line in parsed), "requests' lines carry their id"


def test_the_scan_finds_what_is_planted(tmp_path: Path) -> None:
    """The scan above must be able to fail: every kind of leak planted is found."""
    good = json.dumps({"message": "session s of agent a ended", "session_id": "s"})
    assert leaks([good], {"password": "hunter2-hunter2"}) == []
    planted = [json.dumps({"message": "login with hunter2-hunter2"}),
               json.dumps({"message": "key cak_" + "a" * 40}),
               json.dumps({"message": "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkw.x"}),
               json.dumps({"message": "< BINARY 0a 33 ... 68 75 6e 74 65 72 32 [53 bytes]"}),
               "plain text line"]
    found = leaks(planted, {"password": "hunter2-hunter2"})
    assert len(found) == 5, found

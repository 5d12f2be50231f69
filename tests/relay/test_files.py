"""FILE_TRANSFER sessions through the relay, over real sockets: permission, consent,
addressing, the window and the server's cap on both ends, audit. The agent here is a
protobuf peer (the real agent's files are tested in agent/tests, end to end in
plugins/web_console/tests)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from remote_server.testing.liveserver import eventually, live_server

from remote_core.protocol import pb
from remote_core.protocol.files import CHUNK, WINDOW

from .conftest import Admin, Peer, relay_settings
from .test_consent import attended, settled

pytestmark = pytest.mark.anyio


def files_token(tech: Admin, session_id: str) -> str:
    return str(tech.ok("POST", f"/api/sessions/{session_id}/viewer-token",
                       params={"file_transfer": "true"})["token"])


async def file_viewer(server, tech: Admin, session_id: str, agent: Peer) -> tuple[Peer, str]:
    """``tech`` opens a FILE_TRANSFER session: (its viewer, the viewer id the agent was told)."""
    viewer = await Peer.viewer(server, files_token(tech, session_id),
                               session_type=pb.FILE_TRANSFER)
    response = await viewer.response()
    assert response.success, response.error
    opened = await agent.expect("file_open")
    assert opened.technician_name == tech.username
    return viewer, opened.viewer_id


async def managed(server, admin: Admin) -> tuple[Peer, str]:
    agent = await Peer.agent(server, admin.keyed_machine()[1])
    return agent, await agent.accepted()


def audit(admin: Admin, session_id: str, kind: str) -> list[dict[str, Any]]:
    body = admin.ok("GET", "/api/events", params={"session_id": session_id, "limit": 100})
    items = body["items"] if isinstance(body, dict) else body
    return [e for e in items if e["kind"] == kind]


async def test_files_move_both_ways_between_the_agent_and_their_one_viewer(
        server, admin: Admin) -> None:
    agent, session_id = await managed(server, admin)
    screen = await Peer.viewer(server, admin.viewer_token(session_id))
    await screen.accepted()
    await agent.expect("start_stream")
    one, one_id = await file_viewer(server, admin, session_id, agent)
    two, two_id = await file_viewer(server, admin, session_id, agent)
    # a listing: the viewer's id is the server's to write; the answer reaches that viewer
    await one.send("file_request", pb.FileRequest(viewer_id=two_id, request_id=1,
                                                  op=pb.FILE_OP_LIST, path="/"))
    asked = await agent.expect("file_request")
    assert (asked.viewer_id, asked.request_id, asked.path) == (one_id, 1, "/")
    await agent.send("file_reply", pb.FileReply(viewer_id=one_id, request_id=1, done=True,
                                                entries=[pb.FileEntry(name="home",
                                                                      is_dir=True)]))
    assert [e.name for e in (await one.expect("file_reply")).entries] == ["home"]
    # an upload: offered, accepted at 0, its chunks and their acks, verified in place
    body = bytes(range(256)) * 4096 * 3  # 3 MiB: twelve chunks
    digest = hashlib.sha256(body).hexdigest()
    await one.send("file_request", pb.FileRequest(request_id=2, op=pb.FILE_OP_UPLOAD,
                                                  path="/home/big.bin", size=len(body)))
    assert (await agent.expect("file_request")).size == len(body)
    await agent.send("file_reply", pb.FileReply(viewer_id=one_id, request_id=2, offset=0))
    assert (await one.expect("file_reply")).offset == 0
    received = bytearray()
    for offset in range(0, len(body), CHUNK):
        piece = body[offset:offset + CHUNK]
        last = offset + CHUNK >= len(body)
        await one.send("file_data", pb.FileData(request_id=2, offset=offset, data=piece,
                                                last=last, sha256=digest if last else ""))
        data = await agent.expect("file_data")
        assert data.viewer_id == one_id
        received += data.data
        await agent.send("file_ack", pb.FileAck(viewer_id=one_id, request_id=2,
                                                bytes=len(piece)))
        assert (await one.expect("file_ack")).bytes == len(piece)
    assert bytes(received) == body
    await agent.send("file_reply", pb.FileReply(viewer_id=one_id, request_id=2, done=True,
                                                sha256=digest, path="/home/big.bin"))
    assert (await one.expect("file_reply")).done
    # a download to the other viewer, resumed at 1 KiB
    await two.send("file_request", pb.FileRequest(request_id=1, op=pb.FILE_OP_DOWNLOAD,
                                                  path="/home/big.bin", offset=1024))
    assert (await agent.expect("file_request")).viewer_id == two_id
    await agent.send("file_reply", pb.FileReply(viewer_id=two_id, request_id=1,
                                                size=len(body), offset=1024, version="v1"))
    assert (await two.expect("file_reply")).version == "v1"
    await agent.send("file_data", pb.FileData(viewer_id=two_id, request_id=1, offset=1024,
                                              data=body[1024:1024 + CHUNK]))
    await two.expect("file_data")
    await two.send("file_ack", pb.FileAck(request_id=1, bytes=CHUNK))
    assert (await agent.expect("file_ack")).viewer_id == two_id
    await agent.send("file_data", pb.FileData(viewer_id=two_id, request_id=1,
                                              offset=1024 + CHUNK, last=True, sha256=digest))
    assert (await two.expect("file_data")).last
    await two.send("file_ack", pb.FileAck(request_id=1, bytes=0))  # crosses the end: dropped
    # the channels do not mix: a file viewer's keystrokes, a screen's file requests dropped
    await one.send("key_event", pb.KeyEvent(down=True, vk_code=65))
    await screen.send("file_request", pb.FileRequest(request_id=9, path="/"))
    await settled(agent, 7)
    # a viewer leaves: the agent is told, and the end is audited
    await one.close()
    assert (await agent.expect("file_close")).viewer_id == one_id
    await eventually(lambda: audit(admin, session_id, "files.closed"))
    [uploaded] = audit(admin, session_id, "file.uploaded")
    assert uploaded["actor"] == "admin"
    assert {k: uploaded["detail"][k] for k in ("path", "size", "sha256", "direction")} == {
        "path": "/home/big.bin", "size": len(body), "sha256": digest, "direction": "upload"}
    [downloaded] = audit(admin, session_id, "file.downloaded")
    assert (downloaded["detail"]["size"], downloaded["detail"]["resumed_at"]) == (
        1024 + CHUNK, 1024)
    assert len(audit(admin, session_id, "files.opened")) == 2
    await agent.close()  # the late ack cost the other viewer nothing
    assert (await two.expect("disconnect")).reason == "peer disconnected"


async def test_each_end_is_held_to_the_window(server, admin: Admin) -> None:
    agent, session_id = await managed(server, admin)
    viewer, viewer_id = await file_viewer(server, admin, session_id, agent)
    await viewer.send("file_request", pb.FileRequest(request_id=1, op=pb.FILE_OP_DOWNLOAD,
                                                     path="/home/x"))
    await agent.expect("file_request")
    await agent.send("file_reply", pb.FileReply(viewer_id=viewer_id, request_id=1,
                                                size=64 * WINDOW))
    await viewer.expect("file_reply")
    chunk = b"z" * CHUNK
    for offset in range(0, WINDOW, CHUNK):
        await agent.send("file_data", pb.FileData(viewer_id=viewer_id, request_id=1,
                                                  offset=offset, data=chunk))
        await viewer.expect("file_data")
    # one byte past the window: the agent broke flow control and loses that channel
    await agent.send("file_data", pb.FileData(viewer_id=viewer_id, request_id=1,
                                              offset=WINDOW, data=b"!"))
    assert "window" in (await viewer.expect("disconnect")).reason
    assert (await agent.expect("file_close")).viewer_id == viewer_id
    # a viewer that uploads past the window is closed, as it breaks the protocol
    other, other_id = await file_viewer(server, admin, session_id, agent)
    await other.send("file_request", pb.FileRequest(request_id=4, op=pb.FILE_OP_UPLOAD,
                                                    path="/home/y", size=64 * WINDOW))
    await agent.expect("file_request")
    await agent.send("file_reply", pb.FileReply(viewer_id=other_id, request_id=4))
    await other.expect("file_reply")
    for offset in range(0, WINDOW + CHUNK, CHUNK):
        await other.send("file_data", pb.FileData(request_id=4, offset=offset, data=chunk))
    for _ in range(WINDOW // CHUNK):
        await agent.expect("file_data")
    assert "rules" in (await other.expect("disconnect")).reason
    assert (await other.closed())[0] == 1008
    assert (await agent.expect("file_close")).viewer_id == other_id
    await agent.close()


async def test_the_servers_cap_refuses_big_transfers_either_way(tmp_path) -> None:
    cap = 10 * 1024 * 1024
    with live_server(relay_settings(tmp_path, max_transfer_bytes=cap)) as live:
        admin = Admin(live)
        agent, session_id = await managed(live, admin)
        viewer, viewer_id = await file_viewer(live, admin, session_id, agent)
        # an upload above the cap: answered by the server, the agent never hears of it
        await viewer.send("file_request", pb.FileRequest(request_id=1, op=pb.FILE_OP_UPLOAD,
                                                         path="/home/huge", size=cap + 1))
        refused = await viewer.expect("file_reply")
        assert (refused.error, refused.done) == ("too-large", True)
        assert str(cap) in refused.message
        await settled(agent, 1)
        # a download the agent says is above it: cancelled at the agent, refused to the viewer
        await viewer.send("file_request", pb.FileRequest(request_id=2, op=pb.FILE_OP_DOWNLOAD,
                                                         path="/home/huge"))
        await agent.expect("file_request")
        await agent.send("file_reply", pb.FileReply(viewer_id=viewer_id, request_id=2,
                                                    size=cap + 1))
        cancel = await agent.expect("file_request")
        assert (cancel.op, cancel.request_id) == (pb.FILE_OP_CANCEL, 2)
        assert (await viewer.expect("file_reply")).error == "too-large"
        # the agent's late answer to the cancel reaches nobody
        await agent.send("file_reply", pb.FileReply(viewer_id=viewer_id, request_id=2,
                                                    error="cancelled", done=True))
        await viewer.send("heartbeat", pb.Heartbeat(timestamp=3))
        assert (await viewer.expect("heartbeat_ack", skip=frozenset())).client_timestamp == 3

        def both_refusals() -> list[dict[str, Any]] | None:  # the audit log is written behind
            failed = audit(admin, session_id, "file.failed")
            return failed if len(failed) >= 2 else None

        failed = await eventually(both_refusals, 10, "both refusals in the audit log")
        assert sorted(e["detail"]["error"] for e in failed) == ["too-large", "too-large"]
        assert {e["detail"]["path"] for e in failed} == {"/home/huge", ""}
        await agent.close()


async def test_the_permission_and_the_end_user_gate_file_transfer(
        server, admin: Admin) -> None:
    agent, session_id = await managed(server, admin)
    viewer_only = admin.technician("view", "control", "backstage")
    r = viewer_only.http.post(f"/api/sessions/{session_id}/viewer-token",
                              params={"file_transfer": "true"})
    assert r.status_code == 403
    assert r.json()["detail"] == "file transfer needs the 'file_transfer' permission"
    peer = await Peer.viewer(server, viewer_only.viewer_token(session_id),
                             session_type=pb.FILE_TRANSFER)
    assert (await peer.response()).error == ("file transfer needs the 'file_transfer' "
                                             "permission, which the user lacks")
    await agent.close()
    # attended: even the session's own technician is asked about files, apart from a shell
    tech = admin.technician("view", "support_codes", "file_transfer")
    agent, session_id, _ = await attended(server, tech)
    await agent.send("consent_response", pb.ConsentResponse(session_id=session_id, granted=True))
    await settled(agent, 0)
    r = tech.http.post(f"/api/sessions/{session_id}/viewer-token",
                       params={"file_transfer": "true"})
    assert r.status_code == 409 and r.json()["consent"] == "asking"
    assert "allow your file transfer" in r.json()["detail"]
    request = await agent.expect("consent_request")
    assert request.file_transfer and not request.backstage
    await agent.send("consent_response", pb.ConsentResponse(session_id=session_id, granted=True))
    await settled(agent, 1)
    await file_viewer(server, tech, session_id, agent)
    told = await agent.expect("participants")
    assert [(p.name, p.file_transfer, p.backstage) for p in told.participants] == [
        (tech.username, True, False)]
    both = tech.http.post(f"/api/sessions/{session_id}/viewer-token",
                          params={"file_transfer": "true", "backstage": "true"})
    assert both.status_code == 422
    await agent.close()

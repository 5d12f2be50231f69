"""Recordings through the REST API, over real sockets: what the relay forwarded is what the
segments hold, in order; the hash chain checks out until a byte changes; the ``recordings``
permission and client access decide who sees them, and watching is audited."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from remote_server.testing.liveserver import LiveServer, eventually, live_server

from remote_core.protocol import pb
from remote_core.recording import HEADER, read_segment

from .conftest import Admin, Peer, recording_settings
from .test_backstage import terminal
from .test_files import file_viewer

pytestmark = pytest.mark.anyio

KB = 1024


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("recordings")


@pytest.fixture(scope="module")
def server(folder: Path) -> Iterator[LiveServer]:
    with live_server(recording_settings(folder)) as live:
        yield live


@pytest.fixture(scope="module")
def admin(server: LiveServer) -> Admin:
    return Admin(server)


def frame(sequence: int, keyframe: bool) -> pb.VideoFrame:
    return pb.VideoFrame(timestamp=sequence, sequence=sequence, display_id=0, raw=pb.RawFrame(
        width=100, height=100, data=bytes([sequence % 256]) * (150 * KB), is_keyframe=keyframe))


async def recorded(server: LiveServer, admin: Admin, organization: str = "acme"
                   ) -> tuple[str, dict[str, Any], list[pb.VideoFrame]]:
    """A session watched while its agent sends 40 frames (a keyframe every 10) and the
    viewer says something: (session id, its ended recording's row, the frames sent)."""
    agent_id = admin.machine(organization)
    agent = await Peer.agent(server, admin.key(agent_id)[1])
    session_id = await agent.accepted()
    viewer = await Peer.viewer(server, admin.viewer_token(session_id))
    await viewer.accepted()
    await agent.expect("start_stream")
    sent = [frame(i, keyframe=i % 10 == 0) for i in range(40)]
    for f in sent:
        await agent.send("video_frame", f)
    await viewer.send("chat_message", pb.ChatMessage(id="c1", content="hello"))
    # a viewer that fell behind has the relay ask for a keyframe meanwhile
    await agent.expect("chat_message", skip=frozenset({"heartbeat_ack", "start_stream"}))
    await anyio.sleep(0.2)
    await viewer.close()

    def ended() -> list[dict[str, Any]]:
        rows = admin.ok("GET", "/api/recordings", params={"session_id": session_id})
        return [r for r in rows if r["state"] != "recording"]

    [row] = await eventually(ended, 10, "the recording's end")
    await agent.close()
    return session_id, row, sent


async def test_a_recording_holds_what_was_relayed_and_checks_out_until_a_byte_changes(
        server: LiveServer, admin: Admin, folder: Path) -> None:
    session_id, row, sent = await recorded(server, admin)
    assert row["state"] == "complete" and row["reason"] == "the last technician left"
    assert row["segments"] >= 2 and len(row["sha256"]) == 64  # 6 MB, cut at keyframes
    assert admin.ok("GET", f"/api/recordings/{row['id']}") == row
    assert row["technicians"] == ["admin"]
    mine = admin.ok("GET", "/api/recordings", params={"technician": "admin",
                                                       "since": row["started_at"]})
    assert row["id"] in [r["id"] for r in mine]
    assert admin.ok("GET", "/api/recordings", params={"technician": "nobody"}) == []
    check = admin.ok("GET", f"/api/recordings/{row['id']}/check")
    assert check == {"intact": True, "segments": row["segments"], "sha256": row["sha256"],
                     "first_bad": None, "reason": ""}

    messages: list[pb.Message] = []
    for index in range(row["segments"]):
        r = admin.http.get(f"/api/recordings/{row['id']}/segments/{index}")
        assert r.status_code == 200
        assert r.headers["content-type"] == "application/vnd.remote-support.recording-segment"
        for _at, data in read_segment(r.content).records:
            message = pb.Message()
            message.ParseFromString(data)
            messages.append(message)
    frames = [m.video_frame for m in messages if m.WhichOneof("payload") == "video_frame"]
    assert frames == sent  # exactly as relayed, in order
    chats = [m.chat_message.content for m in messages if m.WhichOneof("payload") == "chat_message"]
    assert chats == ["hello"]
    assert not [m for m in messages if m.WhichOneof("payload") == "video_ack"]
    # read twice, audited once: one view
    admin.http.get(f"/api/recordings/{row['id']}/segments/0")
    assert admin.events(session_id).count("recording.viewed") == 1
    assert admin.events(session_id).count("recording.finished") == 1

    stored = folder / "store" / row["id"] / "000000.seg"
    data = bytearray(stored.read_bytes())
    data[HEADER.size + 5000] ^= 0xFF
    stored.write_bytes(bytes(data))
    check = admin.ok("GET", f"/api/recordings/{row['id']}/check")
    assert check["intact"] is False and check["first_bad"] == 0, check
    assert check["sha256"] != row["sha256"]


async def test_only_holders_of_the_permission_see_recordings_of_their_organizations(
        server: LiveServer, admin: Admin) -> None:
    _, row, _ = await recorded(server, admin, organization="globex")
    one = f"/api/recordings/{row['id']}"
    viewer_only = admin.technician("view")
    for path in ("/api/recordings", one, one + "/check", one + "/segments/0"):
        r = viewer_only.http.get(path)
        assert r.status_code == 403, path
        assert r.json()["detail"] == "session recordings need the 'recordings' permission"
    watcher = admin.technician("recordings")
    assert watcher.ok("GET", one)["id"] == row["id"]  # every organization
    user = next(u for u in admin.ok("GET", "/api/users") if u["username"] == watcher.username)
    admin.ok("PUT", f"/api/users/{user['id']}/client-access", json={"organizations": ["acme"]})
    assert row["id"] not in [r["id"] for r in watcher.ok("GET", "/api/recordings")]
    for path in (one, one + "/check", one + "/segments/0"):
        assert watcher.http.get(path).status_code == 404, path
    for path in ("/api/recordings/nope", one + "/segments/99", one + "/segments/x",
                 one + "/segments/-1"):
        r = admin.http.get(path)
        assert r.status_code == 404 and r.json()["type"] == "/api/problems/not-found", path


async def test_purging_a_session_or_removing_its_machine_purges_its_recordings(
        server: LiveServer, admin: Admin, folder: Path) -> None:
    session_id, row, _ = await recorded(server, admin)
    assert (folder / "store" / row["id"]).is_dir()
    admin.ok("DELETE", f"/api/sessions/{session_id}", params={"purge": "true"})
    assert admin.ok("GET", "/api/recordings", params={"session_id": session_id}) == []
    assert not (folder / "store" / row["id"]).exists()
    assert admin.events(session_id).count("recording.purged") == 1
    session_id, row, _ = await recorded(server, admin)
    admin.ok("DELETE", f"/api/machines/{row['agent_id']}")
    assert admin.http.get(f"/api/recordings/{row['id']}").status_code == 404
    assert not (folder / "store" / row["id"]).exists()
    assert "recording.purged" in admin.events(session_id)


async def test_recordings_past_their_retention_are_purged(tmp_path: Path) -> None:
    """A server keeping recordings a day purges one seeded two days old at its start, but
    not one of a machine its retention policy keeps them a month for."""
    from remote_store_sql.store import SqlStore

    from remote_core.records import RecordingRecord, utcnow

    settings = recording_settings(tmp_path, recordings_keep_days=1,
                                  recording_retention=("machine:a-kept=30",))
    seeded = SqlStore(settings.database_url)
    await seeded.open()
    old = RecordingRecord("old-one", session_id="s-old", agent_id="a-old",
                          started_at=utcnow() - timedelta(days=2))
    await seeded.add_recording(old)
    await seeded.finish_recording(old.id, ended_at=old.started_at + timedelta(minutes=5),
                                  state="complete", reason="", segments=1, bytes=3,
                                  sha256="ab" * 32)
    fresh = RecordingRecord("fresh-one", session_id="s-new", agent_id="a-new",
                            started_at=utcnow() - timedelta(hours=2))
    await seeded.add_recording(fresh)
    await seeded.finish_recording(fresh.id, ended_at=utcnow(), state="complete", reason="",
                                  segments=1, bytes=3, sha256="cd" * 32)
    kept = dataclasses.replace(old, id="kept-one", session_id="s-kept", agent_id="a-kept")
    await seeded.add_recording(kept)
    await seeded.finish_recording(kept.id, ended_at=utcnow(), state="complete", reason="",
                                  segments=1, bytes=3, sha256="ef" * 32)
    await seeded.close()
    for record in (old, fresh, kept):
        (tmp_path / "store" / record.id).mkdir(parents=True)
        (tmp_path / "store" / record.id / "000000.seg").write_bytes(b"seg")
    with live_server(settings) as live:
        admin = Admin(live)
        await eventually(lambda: admin.http.get("/api/recordings/old-one").status_code == 404,
                         10, "the old recording purged")
        assert admin.ok("GET", "/api/recordings/fresh-one")["id"] == "fresh-one"
        assert admin.ok("GET", "/api/recordings/kept-one")["id"] == "kept-one"
        assert not (tmp_path / "store" / "old-one").exists()
        assert (tmp_path / "store" / "fresh-one").is_dir()
        purged = admin.ok("GET", "/api/events", params={"session_id": "s-old"})
        [event] = [e for e in purged if e["kind"] == "recording.purged"]
        assert event["detail"] == {"recording_id": "old-one", "reason": "older than 1 day",
                                   "sha256": "ab" * 32}


async def test_a_full_segment_has_the_relay_ask_for_a_keyframe_so_playback_can_seek(
        server: LiveServer, admin: Admin) -> None:
    """Raw frames come as keyframes only when asked: once a recording's segment holds
    4 MiB, the relay asks (StartStream), and the keyframe that answers starts the next."""
    agent = await Peer.agent(server, admin.key(admin.machine())[1])
    session_id = await agent.accepted()
    viewer = await Peer.viewer(server, admin.viewer_token(session_id))
    await viewer.accepted()
    await agent.expect("start_stream")
    frames = 0

    async def watch() -> None:  # a viewer that keeps up: never a reason to ask itself
        nonlocal frames
        while True:
            if (await viewer.recv()).WhichOneof("payload") == "video_frame":
                frames += 1

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(watch)
        await agent.send("video_frame", frame(0, keyframe=True))
        for sequence in range(1, 27):  # 3.9 MB of changes: the segment is not full yet
            await agent.send("video_frame", frame(sequence, keyframe=False))
        await eventually(lambda: frames == 27, 10, "the frames relayed")
        await agent.send("heartbeat", pb.Heartbeat(timestamp=1))
        await agent.expect("heartbeat_ack", skip=frozenset())  # nothing asked meanwhile
        await agent.send("video_frame", frame(27, keyframe=False))  # 4.2 MB: full
        await agent.expect("start_stream")
        await agent.send("video_frame", frame(28, keyframe=True))
        await eventually(lambda: frames == 29, 10, "the keyframe relayed")
        tasks.cancel_scope.cancel()
    await viewer.close()

    def ended() -> list[dict[str, Any]]:
        rows = admin.ok("GET", "/api/recordings", params={"session_id": session_id})
        return [r for r in rows if r["state"] != "recording"]

    [row] = await eventually(ended, 10, "the recording's end")
    assert row["segments"] == 2  # cut at the keyframe asked for
    await agent.close()


async def test_terminals_and_file_transfers_are_recorded_as_they_happened(
        server: LiveServer, admin: Admin, folder: Path) -> None:
    """A technician with a terminal and the machine's files, and no screen: the recording
    runs from the first channel to the last, and holds the terminal's input (a note) and
    output (as relayed), and each transfer's end, in the order they happened."""
    agent = await Peer.agent(server, admin.key(admin.machine())[1])
    session_id = await agent.accepted()
    shell, shell_id = await terminal(server, admin, session_id, agent)
    await shell.send("backstage_data", pb.BackstageData(data=b"ls\r"))
    assert (await agent.expect("backstage_data")).data == b"ls\r"
    await agent.send("backstage_data", pb.BackstageData(viewer_id=shell_id,
                                                        data=b"ls\r\nreport.txt\r\n$ "))
    await shell.expect("backstage_data")
    files, files_id = await file_viewer(server, admin, session_id, agent)
    await files.send("file_request", pb.FileRequest(request_id=1, op=pb.FILE_OP_DOWNLOAD,
                                                    path="/home/report.txt"))
    await agent.expect("file_request")
    await agent.send("file_reply", pb.FileReply(viewer_id=files_id, request_id=1, size=5))
    await files.expect("file_reply")
    await agent.send("file_data", pb.FileData(viewer_id=files_id, request_id=1, data=b"hello",
                                              last=True, sha256="aa" * 32))
    await files.expect("file_data")
    await shell.close()
    await agent.expect("backstage_close")
    await files.close()
    await agent.expect("file_close")

    def ended() -> list[dict[str, Any]]:
        rows = admin.ok("GET", "/api/recordings", params={"session_id": session_id})
        return [r for r in rows if r["state"] != "recording"]

    [row] = await eventually(ended, 10, "the recording's end")
    assert row["technicians"] == [admin.username]
    held = []
    for path in sorted((folder / "store" / row["id"]).glob("*.seg")):
        for _, data in read_segment(path.read_bytes()).records:
            message = pb.Message()
            message.ParseFromString(data)
            kind = message.WhichOneof("payload")
            if kind == "recording_note":
                note = message.recording_note
                assert (note.technician, note.viewer_id) == (
                    admin.username, shell_id if note.kind.startswith("terminal") else files_id)
                held.append((note.kind, note.data or note.text))
            else:
                held.append((kind, message.backstage_data.data))
    assert held == [
        ("terminal_opened", ""), ("terminal_input", b"ls\r"),
        ("backstage_data", b"ls\r\nreport.txt\r\n$ "), ("files_opened", ""),
        ("file", "downloaded /home/report.txt (5 bytes)"),
        ("terminal_closed", "peer disconnected"), ("files_closed", "peer disconnected")]
    await agent.close()

"""Routing between one agent and its viewers, over real sockets (CONTRACT 1)."""

from __future__ import annotations

import anyio
import pytest
from remote_server.testing.liveserver import eventually

from remote_core.protocol import pb

from .conftest import BUDGET, Admin, Peer

pytestmark = pytest.mark.anyio


def frame(sequence: int, size: int = 1000, keyframe: bool = False) -> pb.VideoFrame:
    return pb.VideoFrame(timestamp=sequence, sequence=sequence, display_id=1, raw=pb.RawFrame(
        width=10, height=10, data=bytes([sequence % 256]) * size, is_keyframe=keyframe))


async def live_session(server, admin: Admin) -> tuple[Peer, str]:
    agent = await Peer.agent(server, admin.keyed_machine()[1])
    return agent, await agent.accepted()


async def test_two_viewers_receive_the_same_frames(server, admin: Admin) -> None:
    agent, session_id = await live_session(server, admin)
    viewers = [await Peer.viewer(server, admin.viewer_token(session_id)) for _ in range(2)]
    for viewer in viewers:
        await viewer.accepted()
    ids = {(await agent.expect("start_stream")).viewer_id for _ in viewers}
    assert len(ids) == 2
    sent = [frame(i, keyframe=i == 0) for i in range(50)]
    for f in sent:
        await agent.send("video_frame", f)
    for viewer in viewers:
        assert [await viewer.expect("video_frame") for _ in sent] == sent
    await viewers[0].close()
    assert (await agent.expect("stop_stream")).viewer_id in ids


def png(sequence: int, keyframe: bool = False) -> pb.VideoFrame:
    return pb.VideoFrame(timestamp=sequence, sequence=sequence, display_id=1, plugin=pb.PluginFrame(
        codec="png", width=10, height=10, data=b"\x89PNG" * 10, keyframe=keyframe))


async def test_each_viewer_is_sent_only_the_codecs_it_listed(server, admin: Admin) -> None:
    agent, session_id = await live_session(server, admin)
    both = await Peer.viewer(server, admin.viewer_token(session_id), codecs=("png", "raw"))
    spec = await Peer.viewer(server, admin.viewer_token(session_id))  # lists none
    only_png = await Peer.viewer(server, admin.viewer_token(session_id), codecs=("png",))
    for viewer in (both, spec, only_png):
        await viewer.accepted()
    told = [list((await agent.expect("start_stream")).codecs) for _ in range(3)]
    assert told == [["png", "raw"], [], ["png"]]
    sent = [frame(1, keyframe=True), png(2, keyframe=True), png(3), frame(4, keyframe=True)]
    for f in sent:
        await agent.send("video_frame", f)
    await agent.send("heartbeat", pb.Heartbeat(timestamp=1))
    await agent.expect("heartbeat_ack")
    for viewer, wanted in [(both, [1, 2, 3, 4]), (spec, [1, 4]), (only_png, [2, 3])]:
        got = [await viewer.expect("video_frame")]
        while got[-1].sequence != wanted[-1]:
            got.append(await viewer.expect("video_frame"))
        # A keyframe supersedes video still queued for a viewer that skipped frames it
        # cannot decode: the raw viewer may see 1 replaced by the newer keyframe 4.
        allowed = [wanted, [4]] if viewer is spec else [wanted]
        assert [f.sequence for f in got] in allowed
        assert got == [f for f in sent if f.sequence in {f.sequence for f in got}]


@pytest.mark.parametrize("codecs", [("Raw",), ("x" * 65,), ("",), ("png",) * 65])
async def test_a_malformed_codec_list_is_refused(server, admin: Admin,
                                                 codecs: tuple[str, ...]) -> None:
    _agent, session_id = await live_session(server, admin)
    viewer = await Peer.viewer(server, admin.viewer_token(session_id), codecs=codecs)
    response = await viewer.response()
    assert not response.success and "SessionRequest.codecs" in response.error


async def test_view_only_input_is_dropped(server, admin: Admin) -> None:
    agent, session_id = await live_session(server, admin)
    control = await Peer.viewer(server, admin.viewer_token(session_id))
    await control.accepted()
    watcher = await Peer.viewer(server, admin.viewer_token(session_id),
                                session_type=pb.VIEW_ONLY)
    await watcher.accepted()
    await watcher.send("mouse_event", pb.MouseEvent(x=1, y=1))
    await watcher.send("key_event", pb.KeyEvent(down=True, vk_code=65))
    await watcher.send("special_key", pb.SpecialKeyEvent(key=pb.CTRL_ALT_DEL))
    await watcher.send("clipboard_data", pb.ClipboardData(data=b"secret"))
    await watcher.send("switch_display", pb.SwitchDisplay(display_id=2))
    await watcher.send("heartbeat", pb.Heartbeat(timestamp=5))
    await watcher.expect("heartbeat_ack")  # everything before it has been handled
    await control.send("mouse_event", pb.MouseEvent(x=42, y=7))
    received = await agent.expect("mouse_event", skip=frozenset({"start_stream"}))
    assert (received.x, received.y) == (42, 7)
    session = server.ctx.registry.live(session_id)
    dropped = next(v.conn.dropped for v in session.viewers.values() if v.conn.view_only)
    assert dropped == {"mouse_event": 1, "key_event": 1, "special_key": 1,
                       "clipboard_data": 1, "switch_display": 1}


async def test_a_user_without_control_permission_is_view_only(server, admin: Admin) -> None:
    _agent, session_id = await live_session(server, admin)
    tech = admin.technician("view")
    viewer = await Peer.viewer(server, tech.viewer_token(session_id))
    await viewer.accepted()
    await viewer.send("key_event", pb.KeyEvent(down=True, vk_code=65))
    await viewer.send("heartbeat", pb.Heartbeat(timestamp=5))
    await viewer.expect("heartbeat_ack")
    session = server.ctx.registry.live(session_id)
    assert [dict(v.conn.dropped) for v in session.viewers.values()] == [{"key_event": 1}]


async def test_a_viewer_token_for_another_session_is_refused(server, admin: Admin) -> None:
    _, first = await live_session(server, admin)
    second_agent, second = await live_session(server, admin)
    token = admin.viewer_token(first)
    viewer = await Peer.viewer(server, token, path=f"/ws/viewer?session_id={second}")
    response = await viewer.response()
    assert not response.success
    assert response.error == "viewer token refused: viewer token belongs to another session"
    assert (await viewer.closed())[0] == 1008
    # Naming another machine in the request is refused the same way.
    viewer = await Peer.open(server, "/ws/viewer")
    await viewer.send("session_request", pb.SessionRequest(
        session_token=token, agent_id=server.ctx.registry.session(second).agent_id))
    assert (await viewer.response()).error == "the viewer token is for another session"
    # A login token, or garbage, is no viewer token.
    for bad in (admin.token, "not-a-token"):
        viewer = await Peer.viewer(server, bad)
        assert (await viewer.response()).error.startswith("viewer token refused")
    # A token outlives its session only as a useless string.
    stale = admin.viewer_token(second)
    await second_agent.close()
    await eventually(lambda: server.ctx.registry.session(second) is None)
    viewer = await Peer.viewer(server, stale)
    assert (await viewer.response()).error == "the session is not live"


async def test_display_info_chat_and_stream_settings_are_routed(server, admin: Admin) -> None:
    agent, session_id = await live_session(server, admin)
    displays = pb.DisplayInfo(primary_display=1, displays=[
        pb.Display(id=1, name="DP-1", width=1920, height=1080, is_primary=True),
        pb.Display(id=2, name="HDMI-1", x=1920, width=1280, height=1024)])
    await agent.send("display_info", displays)
    await agent.send("heartbeat", pb.Heartbeat(timestamp=1))
    await agent.expect("heartbeat_ack")
    viewer = await Peer.viewer(server, admin.viewer_token(session_id))
    response = await viewer.response()
    assert response.success and response.display_info == displays
    await agent.expect("start_stream")
    await viewer.send("switch_display", pb.SwitchDisplay(display_id=2))
    assert (await agent.expect("switch_display")).display_id == 2
    await viewer.send("quality_settings", pb.QualitySettings(preset=pb.QUALITY_LOW))
    assert (await agent.expect("quality_settings")).preset == pb.QUALITY_LOW
    await viewer.send("video_ack", pb.VideoAck(sequence=9, timestamp=99))
    assert (await agent.expect("video_ack")).sequence == 9
    await viewer.send("chat_message", pb.ChatMessage(id="1", sender="technician",
                                                     content="hello"))
    assert (await agent.expect("chat_message")).content == "hello"
    await agent.send("chat_message", pb.ChatMessage(id="2", sender="client", content="hi"))
    assert (await viewer.expect("chat_message")).content == "hi"
    await agent.send("cursor_position", pb.CursorPosition(x=3, y=4, visible=True))
    assert (await viewer.expect("cursor_position")).x == 3
    smaller = pb.DisplayInfo(primary_display=1, displays=[displays.displays[0]])
    await agent.send("display_info", smaller)
    assert await viewer.expect("display_info") == smaller
    # A viewer joining later sees the latest displays.
    late = await Peer.viewer(server, admin.viewer_token(session_id))
    assert (await late.response()).display_info == smaller
    # The server only sends what it may: a viewer's admin_command is never relayed.
    await viewer.send("admin_command", pb.AdminCommand(command=pb.ADMIN_UNINSTALL))
    await agent.send("heartbeat", pb.Heartbeat(timestamp=2))
    await agent.expect("heartbeat_ack", skip=frozenset({"start_stream"}))


async def test_a_stalled_viewer_neither_slows_the_others_nor_grows(server, admin: Admin) -> None:
    agent, session_id = await live_session(server, admin)
    # The stalled viewer stops reading after one message; the kernel buffers fill behind it.
    stalled = await Peer.viewer(server, admin.viewer_token(session_id), max_queue=1)
    await stalled.accepted()
    stalled_id = (await agent.expect("start_stream")).viewer_id
    reader = await Peer.viewer(server, admin.viewer_token(session_id))
    await reader.accepted()
    await agent.expect("start_stream")
    session = server.ctx.registry.live(session_id)
    outbox = session.viewers[stalled_id].outbox
    size, count, peak = 64 * 1024, 400, 0
    keyframe_requests = 0
    for i in range(count):
        await agent.send("video_frame", frame(i, size, keyframe=i % 25 == 0))
        # The healthy viewer gets every frame, in step with the agent.
        assert (await reader.expect("video_frame")).sequence == i
        peak = max(peak, outbox.queued_bytes)
        with anyio.move_on_after(0):
            while True:  # the agent reads keyframe requests on its own socket
                message = await agent.recv(wait=0.001)
                if message.WhichOneof("payload") == "start_stream":
                    assert message.start_stream.viewer_id == stalled_id
                    keyframe_requests += 1
    assert outbox.dropped_frames > 0 and keyframe_requests > 0
    assert peak <= BUDGET + size + 200
    marker = count + 24  # a keyframe sequence after the last one sent
    await agent.send("video_frame", frame(marker, size, keyframe=True))
    # Once it reads again, the stalled viewer sees whole frames: after any gap, a keyframe.
    previous = -1
    while previous != marker:
        got = await stalled.expect("video_frame")
        if got.sequence != previous + 1:
            assert got.raw.is_keyframe, f"frame {got.sequence} after a gap is a delta frame"
        previous = got.sequence


async def test_each_side_may_send_only_its_own_kinds(server, admin: Admin) -> None:
    agent, session_id = await live_session(server, admin)
    viewer = await Peer.viewer(server, admin.viewer_token(session_id))
    await viewer.accepted()
    await agent.expect("start_stream")
    for kind, payload in (("consent_response", pb.ConsentResponse(granted=True)),
                          ("start_stream", pb.StartStream(viewer_id="x")),
                          ("update_info", pb.UpdateInfo(version="9")),
                          ("admin_command", pb.AdminCommand(command=pb.ADMIN_UNINSTALL)),
                          ("agent_status", pb.AgentStatus(hostname="fake"))):
        await viewer.send(kind, payload)
    for kind, payload in (("consent_request", pb.ConsentRequest(session_id=session_id)),
                          ("mouse_event", pb.MouseEvent(x=1)),
                          ("key_event", pb.KeyEvent(vk_code=1)),
                          ("start_stream", pb.StartStream(viewer_id="x")),
                          ("video_ack", pb.VideoAck(sequence=1))):
        await agent.send(kind, payload)
    for peer in (viewer, agent):
        await peer.send("heartbeat", pb.Heartbeat(timestamp=9))
        assert (await peer.expect("heartbeat_ack")).client_timestamp == 9  # nothing else came
    session = server.ctx.registry.live(session_id)
    (viewer_link,) = session.viewers.values()
    assert viewer_link.conn.dropped == {"consent_response": 1, "start_stream": 1,
                                        "update_info": 1, "admin_command": 1, "agent_status": 1}
    assert session.agent.conn.dropped == {"consent_request": 1, "mouse_event": 1,
                                          "key_event": 1, "start_stream": 1, "video_ack": 1}


async def test_a_viewer_who_lost_access_to_the_organization_is_refused(server,
                                                                      admin: Admin) -> None:
    _agent, session_id = await live_session(server, admin)
    tech = admin.technician("view", "control")
    token = tech.viewer_token(session_id)
    user_id = tech.ok("GET", "/api/auth/me")["id"]
    admin.ok("PUT", f"/api/users/{user_id}/client-access", json={"organizations": ["other"]})
    viewer = await Peer.viewer(server, token)
    response = await viewer.response()
    assert response.error == "the user has no access to this machine's organization"

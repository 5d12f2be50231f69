"""BACKSTAGE sessions through the relay, over real sockets: permission, consent, the policy
hook, addressing, flow control, audit. The agent here is a protobuf peer (the real agent's
shells are tested in agent/tests, end to end in plugins/web_console/tests)."""

from __future__ import annotations

import anyio
import pytest
from remote_server.testing.liveserver import eventually, live_server

from remote_core import hookimpl
from remote_core.plugins import get_plugin_manager
from remote_core.protocol import pb
from remote_core.protocol.backstage import WINDOW
from remote_core.types import ConsentDecision

from .conftest import Admin, Peer, relay_settings
from .test_consent import attended, settled

pytestmark = pytest.mark.anyio


def backstage_token(tech: Admin, session_id: str, status: int = 200) -> dict:
    return tech.ok("POST", f"/api/sessions/{session_id}/viewer-token", status,
                   params={"backstage": "true"})


async def terminal(server, tech: Admin, session_id: str, agent: Peer) -> tuple[Peer, str]:
    """``tech`` opens a terminal: (its viewer, the viewer id the agent was told)."""
    viewer = await Peer.viewer(server, backstage_token(tech, session_id)["token"],
                               session_type=pb.BACKSTAGE)
    response = await viewer.response()
    assert response.success, response.error
    assert not response.HasField("display_info")
    opened = await agent.expect("backstage_open")
    assert opened.technician_name == tech.username
    return viewer, opened.viewer_id


async def managed(server, admin: Admin) -> tuple[Peer, str]:
    agent = await Peer.agent(server, admin.keyed_machine()[1])
    return agent, await agent.accepted()


async def test_a_terminal_carries_bytes_both_ways_to_its_own_viewer_only(
        server, admin: Admin) -> None:
    agent, session_id = await managed(server, admin)
    screen = await Peer.viewer(server, admin.viewer_token(session_id))
    await screen.accepted()
    await agent.expect("start_stream")
    one, one_id = await terminal(server, admin, session_id, agent)
    two, two_id = await terminal(server, admin, session_id, agent)
    assert one_id != two_id
    # the viewer's id is the server's to write
    await one.send("backstage_data", pb.BackstageData(viewer_id=two_id, data="ls ä\r".encode()))
    typed = await agent.expect("backstage_data")
    assert (typed.viewer_id, typed.data) == (one_id, "ls ä\r".encode())
    await one.send("backstage_resize", pb.BackstageResize(rows=50, cols=200))
    assert (await agent.expect("backstage_resize")).viewer_id == one_id
    await agent.send("backstage_data", pb.BackstageData(viewer_id=two_id, data=b"for two"))
    assert (await two.expect("backstage_data")).data == b"for two"
    await agent.send("backstage_data", pb.BackstageData(viewer_id=one_id, data=b"for one"))
    assert (await one.expect("backstage_data")).data == b"for one"
    # the screen's viewer gets no terminal output, and terminals no chat
    await agent.send("chat_message", pb.ChatMessage(id="c", content="hello"))
    assert (await screen.expect("chat_message")).content == "hello"
    await one.send("heartbeat", pb.Heartbeat(timestamp=5))
    assert (await one.expect("heartbeat_ack", skip=frozenset())).client_timestamp == 5
    # the channels do not mix: a terminal's mouse and a screen's keystrokes are dropped
    await one.send("mouse_event", pb.MouseEvent(x=1))
    await screen.send("backstage_data", pb.BackstageData(viewer_id=one_id, data=b"x"))
    await settled(agent, 9)
    # a viewer leaves: its shell is ended
    await one.close()
    closed = await agent.expect("backstage_close")
    assert closed.viewer_id == one_id
    # the shell of the other ends: its viewer is closed, saying why
    await agent.send("backstage_close", pb.BackstageClose(viewer_id=two_id, exit_code=0,
                                                          reason="the shell exited with status 0"))
    assert (await two.expect("disconnect")).reason == "the shell exited with status 0"
    assert (await two.closed())[0] == 1000
    kinds = await eventually(lambda: (k := admin.events(session_id)).count("backstage.closed")
                             == 2 and k)
    assert kinds.count("backstage.opened") == 2
    events = admin.ok("GET", "/api/events", params={"session_id": session_id, "limit": 100})
    items = events["items"] if isinstance(events, dict) else events
    opened = [e for e in items if e["kind"] == "backstage.opened"]
    assert {e["actor"] for e in opened} == {"admin"}
    ended = {e["detail"]["viewer_id"]: e for e in items if e["kind"] == "backstage.closed"}
    assert ended[two_id]["detail"]["reason"] == "the shell exited with status 0"
    assert ended[one_id]["detail"]["output_bytes"] == len(b"for one")
    await agent.close()


async def test_a_technician_without_the_permission_is_refused_clearly(
        server, admin: Admin) -> None:
    agent, session_id = await managed(server, admin)
    viewer_only = admin.technician("view", "control")
    r = viewer_only.http.post(f"/api/sessions/{session_id}/viewer-token",
                              params={"backstage": "true"})
    assert r.status_code == 403
    assert r.json()["detail"] == "a backstage terminal needs the 'backstage' permission"
    # a screen token does not open a terminal either
    viewer = await Peer.viewer(server, viewer_only.viewer_token(session_id),
                               session_type=pb.BACKSTAGE)
    response = await viewer.response()
    assert not response.success
    assert response.error == ("a backstage terminal needs the 'backstage' permission, which "
                              "the user lacks")
    assert (await viewer.closed())[0] == 1008
    # the permission alone is enough; viewing is not needed
    shell_only = admin.technician("backstage")
    assert shell_only.ok("GET", "/api/auth/me")["permissions"] == ["backstage"]
    one, _ = await terminal(server, shell_only, session_id, agent)
    # taking it away closes the terminal at once
    me = shell_only.ok("GET", "/api/auth/me")
    admin.ok("PUT", f"/api/users/{me['id']}/permissions", json={"permissions": ["view"]})
    assert "access withdrawn" in (await one.expect("disconnect")).reason
    await agent.expect("backstage_close")
    await agent.close()


async def test_the_agent_is_held_to_the_window(server, admin: Admin) -> None:
    agent, session_id = await managed(server, admin)
    viewer, viewer_id = await terminal(server, admin, session_id, agent)
    chunk = b"y\n" * (32 * 1024)
    for _ in range(WINDOW // len(chunk)):
        await agent.send("backstage_data", pb.BackstageData(viewer_id=viewer_id, data=chunk))
        assert len((await viewer.expect("backstage_data")).data) == len(chunk)
    # acknowledging more than was shown is dropped, not passed on
    await viewer.send("backstage_ack", pb.BackstageAck(bytes=WINDOW + 1))
    await viewer.send("backstage_ack", pb.BackstageAck(bytes=len(chunk)))
    ack = await agent.expect("backstage_ack")
    assert (ack.viewer_id, ack.bytes) == (viewer_id, len(chunk))
    await agent.send("backstage_data", pb.BackstageData(viewer_id=viewer_id, data=chunk))
    await viewer.expect("backstage_data")
    # one byte past the window: the agent broke flow control, and loses that terminal
    await agent.send("backstage_data", pb.BackstageData(viewer_id=viewer_id, data=b"!"))
    assert "flow control" in (await viewer.expect("disconnect")).reason
    assert (await agent.expect("backstage_close")).viewer_id == viewer_id
    # a size that is none is dropped
    other, other_id = await terminal(server, admin, session_id, agent)
    await other.send("backstage_resize", pb.BackstageResize(rows=0, cols=80))
    await other.send("backstage_resize", pb.BackstageResize(rows=24, cols=80))
    resize = await agent.expect("backstage_resize")
    assert (resize.viewer_id, resize.rows, resize.cols) == (other_id, 24, 80)
    await agent.close()
    assert (await other.expect("disconnect")).reason == "peer disconnected"


async def test_the_end_user_is_asked_before_a_terminal_opens(server, admin: Admin) -> None:
    tech = admin.technician("view", "control", "support_codes", "backstage")
    agent, session_id, _ = await attended(server, tech)
    await agent.send("consent_response", pb.ConsentResponse(session_id=session_id, granted=True))
    await settled(agent, 0)
    # consent to the session is not consent to a shell: even its own technician is asked
    r = tech.http.post(f"/api/sessions/{session_id}/viewer-token", params={"backstage": "true"})
    assert r.status_code == 409 and r.json()["consent"] == "asking"
    assert "allow your backstage terminal" in r.json()["detail"]
    request = await agent.expect("consent_request")
    assert request.backstage and request.technician_name == tech.username
    await agent.send("consent_response", pb.ConsentResponse(session_id=session_id, granted=True))
    await settled(agent, 1)
    await terminal(server, tech, session_id, agent)
    told = await agent.expect("participants")
    assert [(p.name, p.backstage) for p in told.participants] == [(tech.username, True)]
    kinds = admin.events(session_id)
    assert {"session.consent_requested", "session.consent_granted", "backstage.opened"} <= set(
        kinds)
    # another technician denied a shell may still be allowed to view
    other = admin.technician("view", "backstage")
    other.http.post(f"/api/sessions/{session_id}/viewer-token", params={"backstage": "true"})
    assert (await agent.expect("consent_request")).backstage
    await agent.send("consent_response", pb.ConsentResponse(session_id=session_id, granted=False))
    await settled(agent, 2)
    r = other.http.post(f"/api/sessions/{session_id}/viewer-token", params={"backstage": "true"})
    assert r.status_code == 403
    assert r.json()["detail"] == "the end user denied your request for a backstage terminal"
    other.http.post(f"/api/sessions/{session_id}/viewer-token")
    request = await agent.expect("consent_request")
    assert not request.backstage and request.access_mode == pb.CONSENT_VIEW
    await agent.close()


async def test_the_consent_policy_can_forbid_terminals_per_machine(tmp_path) -> None:
    forbidden: set[str] = set()

    class Policy:
        @hookimpl
        def consent_policy(self, ask):
            if ask.backstage and ask.agent_id in forbidden:
                return ConsentDecision.DENY
            return ConsentDecision.APPROVE if ask.backstage else None

    settings = relay_settings(tmp_path)
    plugins = get_plugin_manager(settings, extra=[("policy", Policy())])
    with live_server(settings, plugins=plugins) as live:
        admin = Admin(live)
        agent_id, key = admin.keyed_machine()
        forbidden.add(agent_id)
        kiosk = await Peer.agent(live, key)
        kiosk_session = await kiosk.accepted()
        r = admin.http.post(f"/api/sessions/{kiosk_session}/viewer-token",
                            params={"backstage": "true"})
        assert r.status_code == 403
        assert r.json()["detail"] == ("the server's consent policy forbids backstage terminals "
                                      "on this machine")
        viewer = await Peer.viewer(live, admin.viewer_token(kiosk_session),
                                   session_type=pb.BACKSTAGE)
        assert "forbids backstage terminals" in (await viewer.response()).error
        assert "session.consent_denied" in admin.events(kiosk_session)
        # an attended session the policy approves: nobody is asked
        tech = admin.technician("view", "support_codes", "backstage")
        agent, session_id, _ = await attended(live, tech)
        await agent.send("consent_response", pb.ConsentResponse(session_id=session_id,
                                                                granted=True))
        await settled(agent, 0)
        await terminal(live, tech, session_id, agent)
        await agent.close()
        await kiosk.close()


async def test_a_huge_paste_waits_for_the_agent_instead_of_closing_it(
        server, admin: Admin) -> None:
    agent, session_id = await managed(server, admin)
    viewer, viewer_id = await terminal(server, admin, session_id, agent)
    outbox = server.ctx.registry.live(session_id).agent.outbox
    chunk = b"x" * (64 * 1024)
    count = 256  # 16 MiB: far past what the sockets and the agent's outbox (1 MiB) hold
    letters = [bytes([65 + i % 26]) for i in range(count)]
    fullest = 0

    async def paste() -> None:
        for letter in letters:
            await viewer.send("backstage_data", pb.BackstageData(data=letter + chunk[1:]))

    async with anyio.create_task_group() as group:
        group.start_soon(paste)
        for _ in range(40):  # 2 s in which the agent reads nothing
            fullest = max(fullest, outbox.queued_bytes)
            await anyio.sleep(0.05)
        assert not outbox.closed
        got = []
        while len(got) < count:
            message = await agent.expect("backstage_data",
                                         skip=frozenset({"heartbeat_ack", "backstage_resize"}))
            assert message.viewer_id == viewer_id
            got.append(message.data[:1])
            fullest = max(fullest, outbox.queued_bytes)
    assert got == letters  # all of it, in order
    assert fullest <= outbox.budget // 2 + len(chunk) + 64  # the paste waited for room
    await settled(agent, 3)  # and the agent is still connected
    await agent.close()

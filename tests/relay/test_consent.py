"""Attended sessions: support codes (SPEC 3.2) and consent (SPEC 3.1) over real sockets."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from remote_server.testing.liveserver import LiveServer, eventually, live_server

from remote_core.protocol import pb

from .conftest import IMPATIENT, Admin, Peer, recording_settings, relay_settings

pytestmark = pytest.mark.anyio


async def attended(server, admin: Admin, code: str | None = None) -> tuple[Peer, str, object]:
    """An agent presenting a fresh code: (agent, session_id, its ConsentRequest)."""
    agent = await Peer.agent(server, code or admin.code())
    session_id = await agent.accepted()
    request = await agent.expect("consent_request")
    return agent, session_id, request


async def test_consent_granted_makes_the_session_live(server, admin: Admin) -> None:
    agent, session_id, request = await attended(server, admin)
    assert (request.session_id, request.technician_name) == (session_id, "admin")
    assert request.access_mode == pb.CONSENT_CONTROL and request.timeout_secs == 60
    assert admin.ok("GET", f"/api/sessions/{session_id}")["consent_state"] == "pending"
    # While pending: no viewer token, and nothing the agent streams goes anywhere.
    admin.ok("POST", f"/api/sessions/{session_id}/viewer-token", 409)
    await agent.send("consent_response", pb.ConsentResponse(session_id=session_id, granted=True))
    await agent.send("heartbeat", pb.Heartbeat(timestamp=7))
    await agent.expect("heartbeat_ack")
    assert admin.ok("GET", f"/api/sessions/{session_id}")["consent_state"] == "granted"
    viewer = await Peer.viewer(server, admin.viewer_token(session_id))
    await viewer.accepted()
    await agent.expect("participants")  # the end user hears who joins first
    assert (await agent.expect("start_stream")).display_id == 0
    assert "session.consent_granted" in admin.events(session_id)


async def test_no_viewer_joins_while_consent_is_pending(server, admin: Admin) -> None:
    _agent, session_id, _ = await attended(server, admin)
    token = server.ctx.tokens.mint_viewer(session_id, await server_admin(server), None)
    viewer = await Peer.viewer(server, token)
    response = await viewer.response()
    assert not response.success
    assert response.error == "the session is awaiting the end user's consent"


async def server_admin(server):  # the first admin, read from the server's own store
    return await server.ctx.store.get_user_by_username("admin")


async def test_consent_denied_tears_the_session_down(server, admin: Admin) -> None:
    agent, session_id, _ = await attended(server, admin)
    await agent.send("consent_response", pb.ConsentResponse(
        session_id=session_id, granted=False, reason="dialog closed"))
    assert (await agent.expect("disconnect")).reason == "consent denied: dialog closed"
    assert (await agent.closed())[0] == 1000
    kinds = await eventually(lambda: "session.closed" in (k := admin.events(session_id)) and k)
    assert "session.consent_denied" in kinds
    assert admin.ok("GET", f"/api/sessions/{session_id}")["consent_state"] == "pending"
    admin.ok("POST", f"/api/sessions/{session_id}/viewer-token", 409)


@asynccontextmanager
async def beating(agent: Peer) -> AsyncIterator[None]:
    """The agent beats while the block runs, as a real one does while its dialog is open."""
    async with anyio.create_task_group() as beats:
        async def beat() -> None:
            for i in itertools.count():
                await agent.send("heartbeat", pb.Heartbeat(timestamp=i))
                await anyio.sleep(IMPATIENT["heartbeat_interval"])

        beats.start_soon(beat)
        yield
        beats.cancel_scope.cancel()


async def test_consent_timeout_tears_the_session_down(impatient) -> None:
    """The agent keeps beating while the dialog is open, as a real one does; what ends
    the session is the consent timeout (2 s), never the silence one (1.5 s)."""
    admin = Admin(impatient)
    agent, session_id, request = await attended(impatient, admin)
    assert request.timeout_secs == IMPATIENT["consent_timeout"]
    async with beating(agent):
        disconnect = await agent.expect("disconnect", wait=15)
    assert disconnect.reason == "consent timed out"
    assert (await agent.closed())[0] == 1000
    assert "session.consent_timeout" in admin.events(session_id)


async def test_a_second_presenter_of_a_code_is_refused(server, admin: Admin) -> None:
    code = admin.code()
    first, _, _ = await attended(server, admin, code)
    second = await Peer.agent(server, code)
    response = await second.response()
    assert not response.success and response.error == "support code already used"
    # Even once the first session is over, the code stays used (single use).
    await first.close()
    third = await Peer.agent(server, code)
    assert (await third.response()).error == "support code already used"


async def test_racing_presenters_bind_exactly_once(server, admin: Admin) -> None:
    code = admin.code()
    agents = [await Peer.agent(server, code, agent_id=f"racer-{i}") for i in range(5)]
    responses = [await agent.response() for agent in agents]
    assert sum(r.success for r in responses) == 1
    assert {r.error for r in responses if not r.success} == {"support code already used"}


async def test_validating_a_code_does_not_consume_it(server, admin: Admin) -> None:
    code = admin.code()
    admin.ok("POST", "/api/codes/validate", json={"code": code})
    admin.ok("POST", "/api/codes/validate", json={"code": code})
    await attended(server, admin, code)  # still usable: the first bind consumes it
    admin.ok("POST", "/api/codes/validate", 404, json={"code": code})


async def test_unknown_codes_are_refused_and_rate_limited(server, admin: Admin) -> None:
    ip = {"X-Forwarded-For": "10.99.0.1"}
    errors = []
    for _ in range(11):
        agent = await Peer.agent(server, "ABC-DEF-GHJ", headers=ip)
        errors.append((await agent.response()).error)
    assert errors[:10] == ["unknown or expired support code"] * 10
    assert errors[10].startswith("too many support-code attempts; retry in ")
    # The lockout is shared with the REST validation endpoint.
    r = admin.http.post("/api/codes/validate", json={"code": admin.code()}, headers=ip)
    assert r.status_code == 429
    events = admin.ok("GET", "/api/events", params={"limit": 500})
    [lockout] = [e for e in events if e["kind"] == "support_code.lockout"
                 and e["client_ip"] == "10.99.0.1"]
    assert lockout["detail"]["via"] == "agent socket"


async def test_a_consent_policy_can_decide_without_asking(tmp_path) -> None:
    from remote_server.testing.liveserver import live_server

    from remote_core import hookimpl
    from remote_core.plugins import get_plugin_manager
    from remote_core.types import ConsentDecision

    from .conftest import relay_settings

    class Policy:
        def __init__(self) -> None:
            self.seen: list[tuple[str, str]] = []

        @hookimpl
        def consent_policy(self, ask):
            return ConsentDecision.APPROVE if ask.attended else ConsentDecision.DENY

        @hookimpl
        def session_opened(self, session):
            self.seen.append(("opened", session.consent_state))

        @hookimpl
        def session_closed(self, session, reason):
            self.seen.append(("closed", reason))

    policy = Policy()

    settings = relay_settings(tmp_path)
    plugins = get_plugin_manager(settings, extra=[("policy", policy)])
    with live_server(settings, plugins=plugins) as live:
        admin = Admin(live)
        agent = await Peer.agent(live, admin.code())
        session_id = await agent.accepted()
        await agent.send("heartbeat", pb.Heartbeat(timestamp=3))
        await agent.expect("heartbeat_ack")  # no consent_request: the policy approved
        assert admin.ok("GET", f"/api/sessions/{session_id}")["consent_state"] == "granted"
        keyed = await Peer.agent(live, admin.keyed_machine()[1])
        response = await keyed.response()
        assert response.error == "the session was refused by the server's consent policy"
        await agent.close()
        await eventually(lambda: len(policy.seen) == 2)
        assert policy.seen == [("opened", "granted"), ("closed", "peer disconnected")]


async def test_consent_admits_only_the_technician_it_named(server, admin: Admin) -> None:
    """Finding 2: the end user allowed "techa"; another technician whose access covered the
    organization (or an admin) could mint a viewer token and take control unseen. Now the
    others are asked first (below); a token minted past that question is refused."""
    techa = admin.technician("view", "control", "support_codes")
    other = admin.technician("view", "control")
    agent, session_id = await granted(server, techa)
    stranger = await server.ctx.store.get_user_by_username(other.username)
    token = server.ctx.tokens.mint_viewer(session_id, stranger, None)
    sneaking = await Peer.viewer(server, token)
    response = await sneaking.response()
    assert not response.success and "consented to " + techa.username in response.error
    await settled(agent, 1)  # and the end user was not asked on the token's behalf
    viewer = await Peer.viewer(server, techa.viewer_token(session_id))
    await viewer.accepted()


# -- a second technician asks to join ----------------------------------------------------------
async def granted(server, techa: Admin) -> tuple[Peer, str]:
    """An attended session of ``techa``'s code, consented: (agent, session_id)."""
    agent, session_id, request = await attended(server, techa)
    assert request.technician_name == techa.username
    await agent.send("consent_response", pb.ConsentResponse(session_id=session_id, granted=True))
    await settled(agent, 0)
    return agent, session_id


async def settled(agent: Peer, stamp: int) -> None:
    """Everything sent to the agent before now has been read, and nothing but the ack came."""
    await agent.send("heartbeat", pb.Heartbeat(timestamp=stamp))
    assert (await agent.expect("heartbeat_ack", skip=frozenset())).client_timestamp == stamp


def asks(tech: Admin, session_id: str) -> dict:
    """``tech`` asks for a viewer token while the end user is being asked: a 409 to follow."""
    r = tech.http.post(f"/api/sessions/{session_id}/viewer-token")
    assert r.status_code == 409, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.headers["Retry-After"] == "2"
    body = r.json()
    assert body["consent"] == "asking" and "being asked to admit you" in body["detail"]
    return body


async def joined(server, tech: Admin, session_id: str, agent: Peer) -> tuple[Peer, Any]:
    """``tech`` joins as a viewer: (viewer, the Participants the agent was told)."""
    viewer = await Peer.viewer(server, tech.viewer_token(session_id))
    await viewer.accepted()
    told = await agent.expect("participants")  # before the picture starts
    await agent.expect("start_stream")
    return viewer, told


def decided(tech: Admin, session_id: str) -> Any:
    """``tech``'s answer for a viewer token once the end user is no longer being asked."""
    r = tech.http.post(f"/api/sessions/{session_id}/viewer-token")
    return None if r.status_code == 409 else r


def who(participants: Any) -> list[tuple[str, int]]:
    return [(p.name, p.access_mode) for p in participants.participants]


async def test_another_technician_is_asked_and_joins_once_the_end_user_allows(
        server, admin: Admin) -> None:
    techa = admin.technician("view", "control", "support_codes")
    techb = admin.technician("view", "control")
    agent, session_id = await granted(server, techa)
    _, told = await joined(server, techa, session_id, agent)
    assert who(told) == [(techa.username, pb.CONSENT_CONTROL)]
    asks(techb, session_id)
    request = await agent.expect("consent_request")
    assert (request.session_id, request.technician_name) == (session_id, techb.username)
    assert request.access_mode == pb.CONSENT_CONTROL and request.timeout_secs == 60
    # Asking again while the end user decides sends no second dialog.
    asks(techb, session_id)
    await settled(agent, 1)
    # A token minted past the REST check is refused by the relay while the question is open.
    user_b = await server.ctx.store.get_user_by_username(techb.username)
    early = await Peer.viewer(server, server.ctx.tokens.mint_viewer(session_id, user_b, None))
    assert "being asked" in (await early.response()).error
    await agent.send("consent_response", pb.ConsentResponse(session_id=session_id, granted=True))
    await settled(agent, 2)
    _, told = await joined(server, techb, session_id, agent)
    assert who(told) == sorted([(techa.username, pb.CONSENT_CONTROL),
                                (techb.username, pb.CONSENT_CONTROL)])
    events = admin.ok("GET", "/api/events", params={"session_id": session_id, "limit": 100})
    consent = [(e["kind"], e["detail"].get("technician")) for e in events
               if e["kind"].startswith("session.consent_")]
    assert ("session.consent_requested", techb.username) in consent
    assert ("session.consent_granted", techb.username) in consent
    assert ("session.consent_granted", techa.username) in consent


async def test_a_denial_refuses_only_that_technician_and_questions_wait_their_turn(
        server, admin: Admin) -> None:
    techa = admin.technician("view", "control", "support_codes")
    techb = admin.technician("view", "control")
    techc = admin.technician("view")  # no control: asked for viewing only
    agent, session_id = await granted(server, techa)
    viewer_a, _ = await joined(server, techa, session_id, agent)
    asks(techb, session_id)
    assert (await agent.expect("consent_request")).technician_name == techb.username
    asks(techc, session_id)  # queued behind techb's question: no second dialog yet
    await settled(agent, 1)
    await agent.send("consent_response", pb.ConsentResponse(
        session_id=session_id, granted=False, reason="denied by the user"))
    request = await agent.expect("consent_request")  # now techc's turn
    assert (request.technician_name, request.access_mode) == (techc.username, pb.CONSENT_VIEW)
    refused = techb.ok("POST", f"/api/sessions/{session_id}/viewer-token", 403)
    assert refused["consent"] == "denied" and "denied your request" in refused["detail"]
    techb.ok("POST", f"/api/sessions/{session_id}/viewer-token", 403)  # the no stands
    # The session and the technician already admitted are untouched.
    assert admin.ok("GET", f"/api/sessions/{session_id}")["consent_state"] == "granted"
    await viewer_a.send("chat_message", pb.ChatMessage(sender="technician", content="still here"))
    assert (await agent.expect("chat_message")).content == "still here"
    await agent.send("consent_response", pb.ConsentResponse(session_id=session_id, granted=True))
    await settled(agent, 2)
    _, told = await joined(server, techc, session_id, agent)
    assert who(told) == sorted([(techa.username, pb.CONSENT_CONTROL),
                                (techc.username, pb.CONSENT_VIEW)])
    events = admin.ok("GET", "/api/events", params={"session_id": session_id, "limit": 100})
    [denial] = [e for e in events if e["kind"] == "session.consent_denied"]
    assert denial["detail"]["technician"] == techb.username
    assert "session.closed" not in [e["kind"] for e in events]


async def test_an_unanswered_question_times_out_for_that_technician_only(impatient) -> None:
    """The agent keeps beating but never answers; the late answer it sends afterwards
    is not taken for the next technician's question."""
    admin = Admin(impatient)
    techa = admin.technician("view", "control", "support_codes")
    techb = admin.technician("view", "control")
    techc = admin.technician("view", "control")
    agent, session_id = await granted(impatient, techa)
    async with beating(agent):
        asks(techb, session_id)
        assert (await agent.expect("consent_request")).technician_name == techb.username

        r = await eventually(lambda: decided(techb, session_id), wait=15)  # 2 s past the
        assert r.status_code == 403, r.text  # agent's own 2 s dialog, the server gives up
        refused = r.json()
        assert refused["consent"] == "timed out" and "in time" in refused["detail"]
        # The dialog's late "allow" comes after the server gave up: it admits nobody.
        await agent.send("consent_response", pb.ConsentResponse(session_id=session_id,
                                                                granted=True))
        asks(techc, session_id)
        assert (await agent.expect("consent_request")).technician_name == techc.username
        assert techb.http.post(f"/api/sessions/{session_id}/viewer-token").status_code == 403
        await agent.send("consent_response", pb.ConsentResponse(session_id=session_id,
                                                                granted=True))
        r = await eventually(lambda: decided(techc, session_id))
        assert r.status_code == 200, r.text
    assert admin.ok("GET", f"/api/sessions/{session_id}")["consent_state"] == "granted"
    events = admin.ok("GET", "/api/events", params={"session_id": session_id, "limit": 100})
    [timeout] = [e for e in events if e["kind"] == "session.consent_timeout"]
    assert timeout["detail"]["technician"] == techb.username
    assert "session.closed" not in [e["kind"] for e in events]


async def test_the_agent_hears_who_is_connected_as_it_changes(server, admin: Admin) -> None:
    techa = admin.technician("view", "control", "support_codes")
    agent, session_id = await granted(server, techa)
    first, told = await joined(server, techa, session_id, agent)
    assert who(told) == [(techa.username, pb.CONSENT_CONTROL)]
    second, _ = await Peer.viewer(server, techa.viewer_token(session_id)), None
    await second.accepted()
    await agent.expect("start_stream")
    await settled(agent, 1)  # the same technician twice: no change to tell
    await second.close()
    await agent.expect("stop_stream")
    await settled(agent, 2)
    user_a = await server.ctx.store.get_user_by_username(techa.username)
    admin.ok("PUT", f"/api/users/{user_a.id}/permissions", json={"permissions": ["view"]})
    assert who(await agent.expect("participants")) == [(techa.username, pb.CONSENT_VIEW)]
    await first.close()
    await agent.expect("stop_stream")
    assert who(await agent.expect("participants")) == []


@pytest.fixture(scope="module")
def panel_policy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A server whose policy shows managed machines' end users the session panel."""
    with live_server(relay_settings(tmp_path_factory.mktemp("panel"),
                                    session_panel_managed=True)) as live:
        yield live


async def test_the_panel_policy_has_a_managed_agent_show_its_panel_and_told_who_is_connected(
        panel_policy: LiveServer) -> None:
    admin = Admin(panel_policy)
    _, key = admin.keyed_machine()
    agent = await Peer.agent(panel_policy, key)
    session_id = await agent.accepted()
    viewer = await Peer.viewer(panel_policy, admin.viewer_token(session_id))
    await viewer.accepted()
    assert who(await agent.expect("participants")) == [(admin.username, pb.CONSENT_CONTROL)]
    assert (await agent.expect("start_stream")).session_panel is True
    await viewer.close()
    await agent.expect("stop_stream")
    assert who(await agent.expect("participants")) == []


async def test_an_attended_agent_always_shows_its_panel(server, admin: Admin) -> None:
    agent, session_id, _ = await attended(server, admin)
    await agent.send("consent_response", pb.ConsentResponse(session_id=session_id, granted=True))
    await eventually(lambda: admin.ok("GET", f"/api/sessions/{session_id}")["consent_state"]
                     == "granted", 10)
    viewer = await Peer.viewer(server, admin.viewer_token(session_id))
    await viewer.accepted()
    await agent.expect("participants")
    assert (await agent.expect("start_stream")).session_panel is True


async def test_managed_agents_are_never_asked_nor_told(server, admin: Admin) -> None:
    _, key = admin.keyed_machine()
    agent = await Peer.agent(server, key)
    session_id = await agent.accepted()
    viewer = await Peer.viewer(server, admin.viewer_token(session_id))
    await viewer.accepted()
    assert (await agent.expect("start_stream")).session_panel is False  # the shipped policy
    await viewer.close()
    await agent.expect("stop_stream")
    await settled(agent, 1)


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A server that records sessions."""
    path = tmp_path_factory.mktemp("recording")
    with live_server(recording_settings(path)) as live:
        yield live


async def test_the_end_user_is_told_before_consenting_whether_the_session_is_recorded(
        server, admin: Admin, recording: LiveServer) -> None:
    _, _, request = await attended(server, admin)
    assert request.recorded is False
    _, session_id, request = await attended(recording, Admin(recording))
    assert request.recorded is True and request.session_id == session_id

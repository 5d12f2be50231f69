"""Attended sessions: support codes (SPEC 3.2) and consent (SPEC 3.1) over real sockets."""

from __future__ import annotations

import anyio
import pytest

from remote_core.protocol import pb
from remote_core.testing.liveserver import eventually

from .conftest import IMPATIENT, Admin, Peer

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


async def test_consent_timeout_tears_the_session_down(impatient) -> None:
    """The agent keeps beating while the dialog is open, as a real one does; what ends
    the session is the consent timeout (2 s), never the silence one (1.5 s)."""
    admin = Admin(impatient)
    agent, session_id, request = await attended(impatient, admin)
    assert request.timeout_secs == IMPATIENT["consent_timeout"]
    async with anyio.create_task_group() as beats:
        async def beat() -> None:
            for i in range(40):
                await agent.send("heartbeat", pb.Heartbeat(timestamp=i))
                await anyio.sleep(IMPATIENT["heartbeat_interval"])

        beats.start_soon(beat)
        disconnect = await agent.expect("disconnect", wait=15,
                                        skip=frozenset({"heartbeat_ack"}))
        beats.cancel_scope.cancel()
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
    from remote_core import hookimpl
    from remote_core.plugins import get_plugin_manager
    from remote_core.testing.liveserver import live_server
    from remote_core.types import ConsentDecision

    from .conftest import relay_settings

    class Policy:
        def __init__(self) -> None:
            self.seen: list[tuple[str, str]] = []

        @hookimpl
        def consent_policy(self, session):
            return ConsentDecision.APPROVE if session.attended else ConsentDecision.DENY

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
    organization (or an admin) could mint a viewer token and take control unseen."""
    techa = admin.technician("view", "control", "support_codes")
    other = admin.technician("view", "control")
    code = techa.code()
    agent, session_id, request = await attended(server, techa, code)
    assert request.technician_name == techa.username
    await agent.send("consent_response", pb.ConsentResponse(session_id=session_id, granted=True))
    await agent.send("heartbeat", pb.Heartbeat(timestamp=1))
    await agent.expect("heartbeat_ack")
    for outsider in (other, admin):
        refused = outsider.ok("POST", f"/api/sessions/{session_id}/viewer-token", 403)
        assert "consented to " + techa.username in refused["detail"]
    # A token for the outsider minted past the REST check is refused by the relay as well.
    stranger = await server.ctx.store.get_user_by_username(other.username)
    token = server.ctx.tokens.mint_viewer(session_id, stranger, None)
    sneaking = await Peer.viewer(server, token)
    response = await sneaking.response()
    assert not response.success and "consented to " + techa.username in response.error
    viewer = await Peer.viewer(server, techa.viewer_token(session_id))
    await viewer.accepted()

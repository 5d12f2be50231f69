"""Admission and routing with no server and no database: the relay's own drivers over
in-memory doubles (``FakePeer`` sockets, ``MemoryStore``, a ``StaticAuthenticator``).

What the socket suites show over uvicorn and SQLite, shown here in milliseconds
at the layer that decides it, and with faults a real database makes hard to
time (a store that is down exactly while an agent connects).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from remote_server.observe.counters import RATE_LIMITED
from remote_server.observe.metrics import Metrics
from remote_server.relay.admission import AGENTS_ADMITTED_AT_ONCE, REPLACED
from remote_server.relay.audit import Audit
from remote_server.relay.peer import serve_agent, serve_viewer
from remote_server.relay.registry import Registry
from remote_server.relay.writes import WriteQueue
from remote_server.settings import ServerSettings
from remote_server.testing.fakes import FakePeer
from remote_server.testing.liveserver import eventually
from remote_server.web.ratelimit import MemoryRateLimiter

from remote_core.errors import SessionRefused
from remote_core.plugins import get_plugin_manager
from remote_core.protocol import Role, pb
from remote_core.records import User
from remote_core.settings import PluginSettings
from remote_core.testing.fakes import (
    MemoryStore,
    StaticAuthenticator,
    attended_identity,
    keyed_identity,
    static_auth_plugin,
)

pytestmark = pytest.mark.anyio

MANAGED, ATTENDED, REFUSED = "managed-token", "attended-token", "refused-token"


@dataclass
class Relay:
    """One registry on doubles, and the means to connect peers to it."""

    registry: Registry
    store: MemoryStore
    group: anyio.abc.TaskGroup
    limiter: MemoryRateLimiter
    users: dict[str, User]

    async def agent(self, token: str, **fields: object) -> FakePeer:
        peer = FakePeer(Role.AGENT)
        self.group.start_soon(lambda: serve_agent(peer.transport, self.registry, self.limiter,
                                                  client_ip="192.0.2.1"))
        peer.request(token, agent_id=str(uuid.uuid4()), **fields)
        return peer

    async def viewer(self, username: str, session_id: str, *, view_only: bool = False,
                     fingerprint: str | None = None) -> FakePeer:
        user = self.users[username]
        minted = fingerprint or user.password_fingerprint

        def verify(token: str, hint: str | None) -> tuple[str, str, str, int]:
            if token != f"token-of-{username}":
                raise SessionRefused("not a viewer token")
            return user.id, session_id, minted, 0  # the token generation of a new user

        peer = FakePeer(Role.VIEWER)
        self.group.start_soon(lambda: serve_viewer(peer.transport, self.registry, verify,
                                                   client_ip="192.0.2.2"))
        peer.request(f"token-of-{username}",
                     session_type=pb.VIEW_ONLY if view_only else pb.SCREEN_CONTROL)
        return peer


@pytest.fixture
def settings(request: pytest.FixtureRequest) -> ServerSettings:
    """The shipped settings, or those a test names (``indirect`` parametrization)."""
    return getattr(request, "param", ServerSettings())


@pytest.fixture
async def relay(settings: ServerSettings) -> AsyncIterator[Relay]:
    store = MemoryStore()
    await store.open()
    machine = await store.create_machine(str(uuid.uuid4()), organization="acme")
    auth = StaticAuthenticator({MANAGED: keyed_identity(machine.agent_id),
                                ATTENDED: attended_identity("tess", technician_id="u-tess")},
                               refused={REFUSED: "revoked"})
    plugins = get_plugin_manager(PluginSettings(plugins=()), extra=[static_auth_plugin(auth)])
    users = {}
    for name, permissions in (("tess", ("view", "control")), ("vic", ("view",)),
                              ("cora", ("view", "control"))):
        users[name] = await store.create_user(User(
            id=f"u-{name}", username=name, password_hash=f"hash-{name}",
            permissions=permissions, client_access=("*",)))
    writes = WriteQueue()
    registry = Registry(settings=settings, store=store, plugins=plugins,
                        audit=Audit(store, plugins, writes))
    async with anyio.create_task_group() as group:
        writes.start(group)
        group.start_soon(registry.silence.run)
        yield Relay(registry, store, group, MemoryRateLimiter(), users)
        await registry.shutdown("test over")
        group.cancel_scope.cancel()


async def test_a_managed_agent_is_admitted_and_its_video_reaches_only_its_viewers(
        relay: Relay) -> None:
    agent = await relay.agent(MANAGED)
    session_id = (await agent.expect("session_response")).session_id
    tess = await relay.viewer("tess", session_id)
    assert (await tess.expect("session_response")).success
    assert (await agent.expect("start_stream")).viewer_id
    agent.send("video_frame", pb.VideoFrame(sequence=1, h264=pb.EncodedFrame(
        data=b"\x00\x00\x01", keyframe=True)))
    frame = await tess.expect("video_frame")
    assert frame.sequence == 1 and frame.h264.keyframe


async def test_input_goes_to_the_agent_and_a_view_only_viewers_is_dropped(relay: Relay) -> None:
    agent = await relay.agent(MANAGED)
    session_id = (await agent.expect("session_response")).session_id
    tess = await relay.viewer("tess", session_id)
    vic = await relay.viewer("vic", session_id)  # no control permission: view-only
    for viewer in (tess, vic):
        await viewer.expect("session_response")
    vic.send("mouse_event", pb.MouseEvent(x=9, y=9))
    tess.send("mouse_event", pb.MouseEvent(x=1, y=2))
    moved = await agent.expect("mouse_event")
    assert (moved.x, moved.y) == (1, 2)  # vic's, sent first, never arrived


async def test_a_viewers_chat_reaches_the_agent_and_the_other_viewers_not_itself(
        relay: Relay) -> None:
    agent = await relay.agent(MANAGED)
    session_id = (await agent.expect("session_response")).session_id
    tess = await relay.viewer("tess", session_id)
    cora = await relay.viewer("cora", session_id)
    for viewer in (tess, cora):
        await viewer.expect("session_response")
    tess.send("chat_message", pb.ChatMessage(content="hello"))
    assert (await agent.expect("chat_message")).content == "hello"
    assert (await cora.expect("chat_message")).content == "hello"
    tess.send("heartbeat", pb.Heartbeat(timestamp=5))
    assert (await tess.expect("heartbeat_ack")).client_timestamp == 5
    assert "chat_message" not in tess.passed  # a sender never gets its own chat back


async def test_refused_and_unknown_credentials_are_answered_and_closed(relay: Relay) -> None:
    for token in (REFUSED, "nobody-knows-this"):
        agent = await relay.agent(token)
        answer = await agent.expect("session_response")
        assert not answer.success and answer.error
        assert (await agent.closed())[0] == 1008


async def test_an_attended_session_relays_nothing_until_the_end_user_consents(
        relay: Relay) -> None:
    agent = await relay.agent(ATTENDED)
    session_id = (await agent.expect("session_response")).session_id
    assert (await agent.expect("consent_request")).technician_name == "tess"
    early = await relay.viewer("tess", session_id)
    assert not (await early.expect("session_response")).success
    agent.send("consent_response", pb.ConsentResponse(session_id=session_id, granted=True))
    await anyio.sleep(0.05)
    tess = await relay.viewer("tess", session_id)
    assert (await tess.expect("session_response")).success
    assert [p.name for p in (await agent.expect("participants")).participants] == ["tess"]


async def test_a_token_minted_before_a_password_change_is_refused(relay: Relay) -> None:
    agent = await relay.agent(MANAGED)
    session_id = (await agent.expect("session_response")).session_id
    stale = await relay.viewer("tess", session_id, fingerprint="from-an-older-password")
    answer = await stale.expect("session_response")
    assert not answer.success and "password" in answer.error


async def test_a_store_that_is_down_refuses_agents_with_a_retry_and_costs_no_session(
        relay: Relay) -> None:
    relay.store.down()
    agent = await relay.agent(MANAGED)
    answer = await agent.expect("session_response")
    assert not answer.success and "retry later" in answer.error
    assert relay.registry.live_sessions() == []
    relay.store.up()
    again = await relay.agent(MANAGED)
    assert (await again.expect("session_response")).success


class HeldLookups:
    """The store's machine lookups held at a gate: admissions wait on the database."""

    def __init__(self, store: MemoryStore) -> None:
        self.gate = anyio.Event()
        self.inside = self.most = 0
        self._lookup = store.get_machine_by_id
        store.get_machine_by_id = self._held  # type: ignore[method-assign]

    async def _held(self, agent_id: str) -> Any:
        self.inside += 1
        self.most = max(self.most, self.inside)
        await self.gate.wait()
        self.inside -= 1
        return await self._lookup(agent_id)


async def test_a_storm_of_agents_is_admitted_in_turns(relay: Relay) -> None:
    """At most AGENTS_ADMITTED_AT_ONCE admissions wait on the database together; the rest
    wait their turn, so answers start at once instead of all coming at the end."""
    held = HeldLookups(relay.store)
    agents = [await relay.agent(MANAGED) for _ in range(AGENTS_ADMITTED_AT_ONCE + 8)]
    await eventually(lambda: held.inside == AGENTS_ADMITTED_AT_ONCE)
    await anyio.sleep(0.05)  # the others had every chance to enter
    assert held.most == AGENTS_ADMITTED_AT_ONCE
    held.gate.set()
    answers = [await agent.expect("session_response") for agent in agents]
    # One machine's key: each connection replaces the one before, and one that was
    # replaced while it was being admitted is told so (not "could not open the session").
    assert len(relay.registry.live_sessions()) == 1
    assert all(a.success or a.error == REPLACED for a in answers), {a.error for a in answers}


@pytest.mark.parametrize("settings", [ServerSettings(max_agents_waiting=4)], indirect=True)
async def test_agents_waiting_their_turn_are_bounded(relay: Relay) -> None:
    """Past ``max_agents_waiting`` agents waiting for admission (deviation: 4 instead of
    2,048), the next is told to retry later: requests in, like silent sockets, stay
    bounded (T36)."""
    held = HeldLookups(relay.store)
    agents = [await relay.agent(MANAGED) for _ in range(AGENTS_ADMITTED_AT_ONCE + 4)]
    await eventually(lambda: relay.registry.agents_waiting == 4)
    metrics = Metrics(relay.registry.index.sessions, waiting=lambda: relay.registry.agents_waiting)
    assert metrics.registry.get_sample_value("remote_support_agents_waiting_admission") == 4
    refused = RATE_LIMITED["admission"]
    late = await relay.agent(MANAGED)
    answer = await late.expect("session_response")
    assert not answer.success and answer.error == ("the server is busy admitting other "
                                                   "agents; retry later")
    assert RATE_LIMITED["admission"] == refused + 1
    held.gate.set()
    for agent in agents:
        await agent.expect("session_response")


async def test_an_idle_agents_unchanged_reports_are_written_in_batches(relay: Relay) -> None:
    """No database work per agent and report: a report that brings nothing new only
    marks the machine seen, and those marks go out together (Registry.keep_seen)."""
    upserts: list[str] = []
    upsert = relay.store.upsert_machine

    async def counted(report: Any) -> Any:
        upserts.append(report.agent_id)
        return await upsert(report)

    relay.store.upsert_machine = counted  # type: ignore[method-assign]
    agent = await relay.agent(MANAGED)
    await agent.expect("session_response")
    status = pb.AgentStatus(hostname="pc-1", os_version="Debian 12", agent_version="1.0.0")
    for _ in range(3):
        agent.send("agent_status", status)
    machine_id = upserts[0]
    await eventually(lambda: len(upserts) >= 2, 5, "the first report written")
    await anyio.sleep(0.2)
    assert upserts == [machine_id, machine_id]  # registration, then one report of three
    before = await relay.store.get_machine(machine_id)
    assert before is not None
    with anyio.move_on_after(0.3):
        await relay.registry.keep_seen(every=0.1)
    after = await relay.store.get_machine(machine_id)
    assert after is not None and after.last_seen is not None
    assert before.last_seen is None or after.last_seen > before.last_seen


async def test_shutdown_writes_every_sessions_end_together(relay: Relay) -> None:
    """At shutdown the sessions' ends, their machines' offline states and their audit events
    go out in one write each, not one each per session (2,000 sessions took 6,000)."""
    calls: list[str] = []
    for name in ("update_session", "set_machine_status", "add_event", "end_sessions",
                 "set_machines_offline", "add_events"):
        method = getattr(relay.store, name)

        async def counted(*args: Any, _name: str = name, _method: Any = method,
                          **kwargs: Any) -> Any:
            calls.append(_name)
            return await _method(*args, **kwargs)

        setattr(relay.store, name, counted)
    agents = [await relay.agent(ATTENDED) for _ in range(3)]
    sessions = [(await agent.expect("session_response")).session_id for agent in agents]
    calls.clear()
    await relay.registry.shutdown("server shutting down")
    assert sorted(calls) == ["add_events", "end_sessions", "set_machines_offline"]
    for session_id in sessions:
        record = await relay.store.get_session(session_id)
        assert record is not None and record.end_reason == "server shutting down"
    closed = [e for e in await relay.store.list_events() if e.kind == "session.closed"]
    assert sorted(e.session_id for e in closed) == sorted(sessions)
    for agent in agents:
        assert (await agent.closed())[0] == 1001

"""One node of a cluster: joins the bus, keeps the directory, forwards viewers.

Cluster mode is one setting, ``REMOTE_SUPPORT_BUS_URL`` (NATS), with
``DATABASE_URL`` on PostgreSQL and ``LIMITS_URL`` on Redis; every node runs the
same ``remote-support serve``. Agents and viewers reach any node through the
load balancer. A viewer whose session another node holds is forwarded to that
node's own viewer socket (:mod:`.forward`: measured faster than carrying its
messages over the bus); the REST API's questions and actions reach every node
through :class:`~.directory.ClusterDirectory`.

On the bus (subjects under the cluster's name, ``CLUSTER_NAME``): ``.nodes``
carries announcements (with the address the other nodes reach a node at) and
goodbyes; ``.dir`` the changes of each node's live sessions and ``.dir.sync``
a newcomer's request for them; ``.node.<id>.act`` and ``.node.<id>.drain``
a node's requests.

A node cut off from the bus while the others are not is, to them, dead: once its
lease has run out they close its sessions in the database. The node itself cannot
tell that from the whole bus being down (when nothing is closed), so it asks the
database. Every node beats there every third of a lease, saying whether it reaches the
bus. Once cut off for a lease, a node looks every third of one for other nodes whose
last beat says they reach the bus, and for its live sessions closed elsewhere. Finding
either, it is *fenced*: it turns new agents away (to retry) and fails ``/readyz``, so
the load balancer sends them to the nodes the cluster can reach, and it ends its
sessions the others have closed, so their agents reconnect there too, until it is back
on the bus.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import anyio
import nats
from anyio.abc import TaskGroup
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from remote_core.errors import SessionRefused, StoreError
from remote_core.protocol import CloseCode, Connection, Inbound, RemoteProtocolError, Role
from remote_core.records import utcnow

from ..relay.peer import InlineAnswer, Transport, ViewerVerifier, serve_viewer
from ..relay.registry import Registry
from ..relay.session import SessionSnapshot
from ..settings import ServerSettings
from .directory import ClusterDirectory, act, act_subject
from .forward import ViewerEnd, forward
from .members import Members
from .replica import Replica, from_wire, to_wire

__all__ = ["ClusterNode", "drain_subject"]

log = logging.getLogger(__name__)

PUBLISH_EVERY = 0.25
"""Seconds between two publications of the sessions opened or ended here."""
FULL_EVERY = 8
"""Every this many publications, every session is looked at for other changes (viewers,
consent): other nodes see those within two seconds."""
FENCED = "this server node is cut off from the cluster; reconnect"
"""Why a fenced node ends its sessions closed elsewhere and turns new agents away."""
BATCH = 200
"""Snapshots per directory message (well under the bus's payload limit)."""


def drain_subject(prefix: str, node: str) -> str:
    return f"{prefix}.node.{node}.drain"


def own_url(settings: ServerSettings) -> str:
    """Where the other nodes reach this one, unless ``node_url`` says."""
    host = settings.host
    if host in ("0.0.0.0", "::", ""):  # noqa: S104 - naming the wildcard, not binding it
        host = socket.gethostname()
    elif ":" in host:
        host = f"[{host}]"
    scheme = "https" if settings.tls_cert else "http"
    return f"{scheme}://{host}:{settings.port}"


def default_node_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class _Replayed:
    """A socket whose first message was read already, to be read again."""

    def __init__(self, transport: Transport, first: bytes | str) -> None:
        self._transport = transport
        self._first: bytes | str | None = first

    async def receive(self) -> bytes | str | None:
        if self._first is not None:
            first, self._first = self._first, None
            return first
        return await self._transport.receive()

    async def send(self, data: bytes) -> None:
        await self._transport.send(data)

    async def close(self, code: int, reason: str) -> None:
        await self._transport.close(code, reason)

    def answer_inline(self, answer: InlineAnswer | None) -> None:
        self._transport.answer_inline(answer)

    def send_now(self, data: bytes) -> bool:
        return self._transport.send_now(data)


class ClusterNode:
    """This process as a member of the cluster (use :meth:`running`)."""

    def __init__(self, settings: ServerSettings, registry: Registry, nc: NATS,
                 verify: ViewerVerifier, group: TaskGroup) -> None:
        self.settings = settings
        self.id = settings.node_id or default_node_id()
        self.prefix = settings.cluster_name
        self.registry = registry
        self._nc = nc
        self._verify = verify
        self._group = group
        self.members = Members(self.id, settings.node_lease)
        self.replica = Replica()
        self.directory = ClusterDirectory(registry, self.replica, self.members, nc,
                                          self.prefix)
        self.url = settings.node_url or own_url(settings)
        self._urls: dict[str, str] = {}  # the other nodes' addresses, from their announcements
        self._published: dict[str, tuple[str, int, str, str]] = {}  # session -> snapshot_key
        self._news = False  # another node's sessions changed since _yield_to_newer looked
        self._edges: dict[str, set[anyio.Event]] = {}  # owner -> its forwarded viewers' flags

    @classmethod
    @asynccontextmanager
    async def running(cls, settings: ServerSettings, registry: Registry,
                      verify: ViewerVerifier) -> AsyncIterator[ClusterNode]:
        """Join the bus, learn the other nodes' sessions, close what no node holds; on the
        way out say goodbye, so the others need not wait for the lease to run out."""
        assert settings.bus_url is not None
        nc = await nats.connect(settings.bus_url, name="remote-support",
                                max_reconnect_attempts=-1, reconnect_time_wait=0.5)
        try:
            async with anyio.create_task_group() as group:
                node = cls(settings, registry, nc, verify, group)
                await node._join()
                try:
                    yield node
                finally:
                    with anyio.CancelScope(shield=True):
                        await node._leave()
                    group.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await nc.close()

    def _subject(self, name: str) -> str:
        return f"{self.prefix}.{name}"

    # -- joining and leaving ------------------------------------------------------------
    async def _join(self) -> None:
        started = utcnow()
        await self._subscribe(self._subject("nodes"), self._on_announcement)
        await self._subscribe(self._subject("dir"), self._on_directory)
        await self._subscribe(self._subject("dir.sync"), self._on_sync_request)
        await self._subscribe(act_subject(self.prefix, self.id), self._on_act)
        await self._subscribe(drain_subject(self.prefix, self.id), self._on_drain)
        await self._announce()
        await self._nc.publish(self._subject("dir.sync"), json.dumps({"node": self.id}).encode())
        await self._nc.flush()
        await anyio.sleep(min(1.0, self.settings.node_lease / 3))  # the others answer
        ended = await self.registry.store.end_open_sessions(
            "its server node stopped", utcnow(), keep=self.replica.session_ids(),
            created_before=started - timedelta(seconds=self.settings.node_lease))
        offline = await self.registry.store.set_all_machines_offline(
            keep={s.agent_id for s in self.replica.snapshots()})
        log.info("cluster node %s joined %d other node(s); %d orphaned sessions closed, "
                 "%d machines set offline", self.id, len(self.members.alive()) - 1, ended,
                 offline)
        self._group.start_soon(self._keep_announcing)
        self._group.start_soon(self._keep_publishing)
        self._group.start_soon(self._watch_fencing)

    async def _leave(self) -> None:
        try:
            await self._publish_changes()
            await self._nc.publish(self._subject("nodes"), json.dumps(
                {"node": self.id, "bye": True}).encode())
            await self._nc.flush(timeout=2)
        except Exception:
            log.debug("leaving the cluster quietly failed", exc_info=True)
        try:
            await self.registry.store.forget_node(self.id)
        except StoreError as exc:
            log.debug("could not forget this node's beat: %s", exc)

    async def _subscribe(self, subject: str, handler: Callable[[Msg], Awaitable[None]]) -> Any:
        async def guarded(msg: Msg) -> None:
            try:
                await handler(msg)
            except Exception:
                log.exception("handling %s failed", msg.subject)

        return await self._nc.subscribe(subject, cb=guarded)

    # -- membership -----------------------------------------------------------------------
    async def _announce(self) -> None:
        await self._nc.publish(self._subject("nodes"), json.dumps(
            {"node": self.id, "lease": self.settings.node_lease, "url": self.url}).encode())

    async def _keep_announcing(self) -> None:
        while True:
            await anyio.sleep(self.settings.node_lease / 3)
            await self._announce()
            for node in self.members.expired(time.monotonic()):
                await self._node_gone(node, "stopped answering")

    async def _on_announcement(self, msg: Msg) -> None:
        news = json.loads(msg.data)
        node = str(news["node"])
        if node == self.id:
            return
        if news.get("bye"):
            if self.members.left(node):
                await self._node_gone(node, "left")
            return
        if "url" in news:
            self._urls[node] = str(news["url"])
        if self.members.heard(node, float(news.get("lease", self.settings.node_lease)),
                              time.monotonic()):
            # New, or back after a bus outage that outlasted its lease: ask it for
            # everything it holds (its changes since were published to no one here).
            log.info("cluster node %s joined", node)
            await self._nc.publish(self._subject("dir.sync"), json.dumps(
                {"node": self.id, "from": node}).encode())

    async def _node_gone(self, node: str, how: str) -> None:
        """Forget a node's sessions; the sweeper closes them in the database, and every
        node closes the viewers it was piping to that node."""
        for lost in self._edges.pop(node, set()):
            lost.set()
        sessions = self.replica.drop(node)
        log.warning("cluster node %s %s; it held %d sessions", node, how, len(sessions))
        if self.members.sweeper() != self.id or not self._nc.is_connected:
            return  # a node cut off from the bus itself cannot tell who is gone
        try:
            await self.registry.store.forget_node(node)  # back, it beats again
        except StoreError as exc:
            log.warning("could not forget cluster node %s's beat: %s", node, exc)
        now = utcnow()
        for snapshot in sessions:
            await self.registry.store.update_session(
                snapshot.session_id, ended_at=now,
                end_reason=f"its server node {node} {how}")
            if not self.directory.is_online(snapshot.agent_id):
                await self.registry.store.set_machine_status(snapshot.agent_id, "offline", now)

    # -- fencing -------------------------------------------------------------------------
    async def _watch_fencing(self) -> None:
        lease = self.settings.node_lease
        cut_off_since: float | None = None
        while True:
            await anyio.sleep(lease / 3)
            on_bus = self._nc.is_connected
            await self._beat(on_bus)
            if on_bus:
                if self.fenced:
                    log.warning("cluster node %s is back on the bus: ready again", self.id)
                cut_off_since, self.registry.index.fenced = None, None
                continue
            now = time.monotonic()
            cut_off_since = cut_off_since if cut_off_since is not None else now
            if now - cut_off_since >= lease:
                await self._end_sessions_closed_elsewhere()
                if not self.fenced:
                    await self._fence_if_others_reach_the_bus()

    async def _beat(self, on_bus: bool) -> None:
        """Tell the database this node is alive and whether it reaches the bus."""
        try:
            await self.registry.store.beat_node(self.id, on_bus, utcnow())
        except StoreError as exc:
            log.warning("cluster node %s could not record its beat: %s", self.id, exc)

    async def _end_sessions_closed_elsewhere(self) -> None:
        live = [s.session_id for s in self.registry.live_sessions()]
        try:
            closed = await self.registry.store.ended_sessions(live) if live else set()
        except StoreError as exc:
            log.warning("cut off from the bus, and the database did not answer: %s", exc)
            return
        if not closed:
            return
        log.warning("cluster node %s is cut off from the bus and the other nodes have closed "
                    "%d of its sessions: ending them", self.id, len(closed))
        self._fence("its sessions are closed elsewhere")
        for session_id in closed:
            await self.registry.disconnect_session(session_id, FENCED, mark_offline=False)

    async def _fence_if_others_reach_the_bus(self) -> None:
        """Fenced even holding no session: other nodes beat, lately, that they reach the
        bus. A beat counts for two thirds of a lease (they beat every third), so a node
        that lost the bus too has said so by the time this one asks."""
        since = utcnow() - timedelta(seconds=self.settings.node_lease * 2 / 3)
        try:
            others = await self.registry.store.nodes_on_bus(since) - {self.id}
        except StoreError as exc:
            log.warning("cut off from the bus, and the database did not answer: %s", exc)
            return
        if others:
            self._fence(f"node(s) {', '.join(sorted(others))} reach the bus")

    def _fence(self, why: str) -> None:
        if not self.fenced:
            log.warning("cluster node %s is cut off from the bus and %s: not ready until "
                        "the bus is back", self.id, why)
        self.registry.index.fenced = FENCED

    @property
    def fenced(self) -> bool:
        """Cut off from the bus while other nodes reach it (or have closed sessions of this
        one): not ready, and agents are told to retry (through the balancer, elsewhere)."""
        return self.registry.index.fenced is not None

    # -- the directory --------------------------------------------------------------------
    async def _keep_publishing(self) -> None:
        ticks = 0
        while True:
            await anyio.sleep(PUBLISH_EVERY)
            ticks += 1
            await self._publish_changes(full=ticks % FULL_EVERY == 0)
            await self._yield_to_newer()

    async def _publish_changes(self, *, full: bool = True) -> None:
        """Publish the sessions that opened or ended (noted by the index as it happens)
        and, on a full pass, those whose snapshot changed; a full pass looks at every
        session, so it runs every ``FULL_EVERY`` publications only."""
        index = self.registry.index
        touched = index.drain_touched()
        sessions = index.sessions() if full else [
            s for s in map(index.get, touched) if s is not None]
        changed: list[SessionSnapshot] = []
        for session in sessions:
            key = session.snapshot_key()
            if self._published.get(session.session_id) != key:
                self._published[session.session_id] = key
                changed.append(session.snapshot())
        gone = ({sid for sid in self._published if index.get(sid) is None} if full
                else {sid for sid in touched if index.get(sid) is None})
        removed = [sid for sid in gone if self._published.pop(sid, None) is not None]
        await self._publish_directory(changed, removed)

    async def _publish_directory(self, upsert: list[SessionSnapshot],
                                 remove: list[str]) -> None:
        for start in range(0, max(len(upsert), len(remove)), BATCH):
            await self._nc.publish(self._subject("dir"), json.dumps({
                "node": self.id, "upsert": [to_wire(s) for s in upsert[start:start + BATCH]],
                "remove": remove[start:start + BATCH]}).encode())

    async def _yield_to_newer(self) -> None:
        """An agent that reconnected through another node leaves its older session here
        (looked for only when another node has opened sessions since the last look)."""
        if not self._news:
            return
        self._news = False
        local = self.registry.index
        for agent_id in local.agent_ids() & self.replica.agent_ids():
            session, found = local.for_agent(agent_id), self.replica.for_agent(agent_id)
            if session is not None and found is not None and (
                    found[1].created_at > session.created_at):
                await self.registry.disconnect_session(
                    session.session_id, "the agent reconnected through another server node")

    async def _on_directory(self, msg: Msg) -> None:
        news = json.loads(msg.data)
        node = str(news["node"])
        if node == self.id:
            return
        if node not in self.members.alive():
            self.members.heard(node, self.settings.node_lease, time.monotonic())
        upsert = news.get("upsert", ())
        self.replica.upsert(node, (from_wire(item) for item in upsert))
        self._news = self._news or bool(upsert)
        self.replica.remove(node, news.get("remove", ()))

    async def _on_sync_request(self, msg: Msg) -> None:
        """Publish all this node holds, for a newcomer (to every node) or for a node that
        asks this one alone (``from``)."""
        request = json.loads(msg.data)
        if request.get("node") == self.id or request.get("from") not in (None, self.id):
            return
        await self._announce()
        await self._publish_directory(self.registry.live_sessions(), [])

    # -- requests from other nodes ----------------------------------------------------------
    async def _on_act(self, msg: Msg) -> None:
        request = json.loads(msg.data)
        try:
            answer: dict[str, Any] = {"result": await act(self.registry, request["method"],
                                                          request.get("args", {}))}
        except SessionRefused as exc:
            answer = {"error": {"type": type(exc).__name__, "message": str(exc)}}
        await msg.respond(json.dumps(answer).encode())

    async def _on_drain(self, msg: Msg) -> None:
        """``remote-support drain``: stop as SIGTERM stops a node (it refuses new sessions,
        tells its agents and viewers why, and they reconnect through the other nodes)."""
        log.warning("cluster node %s draining on request", self.id)
        await msg.respond(json.dumps({"node": self.id,
                                      "sessions": len(self.registry.live_sessions())}).encode())
        os.kill(os.getpid(), signal.SIGTERM)

    # -- viewers that reach this node ---------------------------------------------------------
    async def serve_viewer(self, transport: Transport, viewer: ViewerEnd, *, client_ip: str,
                           session_hint: str | None) -> None:
        """Serve a viewer here when its session is here (or nowhere: the relay refuses
        it as usual), else tunnel it (``viewer``, its socket) to the session's node."""
        first: bytes | str | None = None
        wait = self.settings.first_message_timeout
        with anyio.move_on_after(wait) as waited:
            first = await transport.receive()
        if waited.cancelled_caught:
            await transport.close(CloseCode.POLICY_VIOLATION, f"no session_request within "
                                                              f"{wait:g} s")
            return None
        if first is None:
            return None
        owner = self._owner_for(first, session_hint)
        if owner is None or owner == self.id or isinstance(first, str):
            return await serve_viewer(_Replayed(transport, first), self.registry,
                                      self._verify, client_ip=client_ip,
                                      session_hint=session_hint)
        url = self._urls.get(owner)
        if url is None:  # not announced yet: the relay here refuses it as not live
            return await serve_viewer(_Replayed(transport, first), self.registry,
                                      self._verify, client_ip=client_ip,
                                      session_hint=session_hint)
        lost = anyio.Event()
        self._edges.setdefault(owner, set()).add(lost)
        log.info("viewer from %s forwarded to node %s", client_ip, owner)
        try:
            why = await forward(transport, viewer, first, url, client_ip=client_ip,
                                session_hint=session_hint,
                                limit=self.settings.max_message_bytes, owner_lost=lost)
            log.info("viewer from %s forwarded to node %s: ended, %s", client_ip, owner, why)
        except OSError as exc:
            log.warning("node %s could not be reached at %s: %s", owner, url, exc)
            await transport.close(CloseCode.SERVICE_RESTART,
                                  "the session's server node cannot be reached")
        finally:
            self._edges.get(owner, set()).discard(lost)
        return None

    def _owner_for(self, first: bytes | str, hint: str | None) -> str | None:
        """The node holding the session the viewer's token names, if the token is good."""
        if isinstance(first, str):
            return None
        try:
            event = Connection(Role.SERVER, Role.VIEWER,
                               self.settings.max_message_bytes).receive_data(first)
            if not isinstance(event, Inbound) or event.kind != "session_request":
                return None
            _, session_id, _, _ = self._verify(event.payload().session_token, hint)
        except (RemoteProtocolError, SessionRefused):
            return None
        return self.directory.owner(session_id)




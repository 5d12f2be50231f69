"""The session directory of a cluster node: its own registry plus the other nodes'.

Questions (which sessions are live, is a machine online) are answered from this
node's registry and the replica of the others'; an action on a session another
node holds is a request to that node over the bus, where its registry carries
it out exactly as for a local one.
"""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout

from remote_core.errors import SessionRefused
from remote_core.protocol import Channel, pb

from ..relay.auth import NotReady
from ..relay.consent import Standing
from ..relay.registry import Registry
from ..relay.session import SessionSnapshot
from .members import Members
from .replica import Replica

__all__ = ["ClusterDirectory", "act_subject"]

log = logging.getLogger(__name__)

ACT_TIMEOUT = 5.0
"""Seconds a node has to carry out another node's request."""


def act_subject(prefix: str, node: str) -> str:
    return f"{prefix}.node.{node}.act"


class ClusterDirectory:
    """:class:`~remote_server.relay.directory.SessionDirectory` over every live node."""

    def __init__(self, registry: Registry, replica: Replica, members: Members,
                 nc: NATS, prefix: str) -> None:
        self._prefix = prefix
        self._registry = registry
        self._replica = replica
        self._members = members
        self._nc = nc

    # -- questions, answered here ---------------------------------------------------------
    def live_sessions(self) -> list[SessionSnapshot]:
        return [*self._registry.live_sessions(), *self._replica.snapshots()]

    def session(self, session_id: str) -> SessionSnapshot | None:
        local = self._registry.session(session_id)
        if local is not None:
            return local
        found = self._replica.get(session_id)
        return found[1] if found else None

    def session_for_agent(self, agent_id: str) -> SessionSnapshot | None:
        local = self._registry.session_for_agent(agent_id)
        found = self._replica.for_agent(agent_id)
        if found is None or (local is not None and local.created_at >= found[1].created_at):
            return local
        return found[1]

    def is_online(self, agent_id: str) -> bool:
        return self._registry.is_online(agent_id) or self._replica.for_agent(agent_id) is not None

    def owner(self, session_id: str) -> str | None:
        """The node holding ``session_id`` (this one's id when it is here), or None."""
        if self._registry.live(session_id) is not None:
            return self._members.me
        found = self._replica.get(session_id)
        return found[0] if found else None

    # -- actions, carried out where the session is ----------------------------------------
    async def admission(self, session_id: str, user_id: str, *,
                        channel: Channel | None = None) -> Standing:
        node = self.owner(session_id)
        if node is None or node == self._members.me:
            return await self._registry.admission(session_id, user_id, channel=channel)
        answer = await self._ask(node, "admission", session_id=session_id, user_id=user_id,
                                 channel=channel.value if channel is not None else None)
        return Standing(answer)

    async def send_to_agent(self, agent_id: str, kind: str, payload: Any) -> bool:
        if self._registry.is_online(agent_id):
            return await self._registry.send_to_agent(agent_id, kind, payload)
        found = self._replica.for_agent(agent_id)
        if found is None:
            return False
        wrapped = pb.Message()
        getattr(wrapped, kind).CopyFrom(payload)
        return bool(await self._try(found[0], "send_to_agent", agent_id=agent_id,
                                    message=base64.b64encode(wrapped.SerializeToString())
                                    .decode()))

    async def disconnect_session(self, session_id: str, reason: str) -> bool:
        node = self.owner(session_id)
        if node is None or node == self._members.me:
            return await self._registry.disconnect_session(session_id, reason)
        return bool(await self._try(node, "disconnect_session", session_id=session_id,
                                    reason=reason))

    async def purge_session(self, session_id: str) -> bool:
        node = self.owner(session_id)
        if node is None or node == self._members.me:
            return await self._registry.purge_session(session_id)
        return bool(await self._try(node, "purge_session", session_id=session_id))

    async def purge_machine(self, agent_id: str) -> None:
        await self._everywhere("purge_machine", agent_id=agent_id)

    async def close_agents_with_key(self, key_id: str, reason: str) -> int:
        counts = await self._everywhere("close_agents_with_key", key_id=key_id, reason=reason)
        return sum(int(c or 0) for c in counts)

    async def user_changed(self, user_id: str, *, password_changed: bool = False,
                           revoked: str | None = None) -> None:
        await self._everywhere("user_changed", user_id=user_id,
                               password_changed=password_changed, revoked=revoked)

    # -- the bus ------------------------------------------------------------------------------
    async def _everywhere(self, method: str, **args: Any) -> list[Any]:
        """Carry out ``method`` on every live node, this one included."""
        results = [await act(self._registry, method, args)]
        for node in sorted(self._members.alive() - {self._members.me}):
            try:
                results.append(await self._ask(node, method, **args))
            except SessionRefused as exc:
                log.warning("node %s could not %s: %s", node, method, exc)
        return results

    async def _try(self, node: str, method: str, **args: Any) -> Any:
        """:meth:`_ask`, for an action whose node may have just died: its sessions are as
        good as gone (the sweeper closes them), so the action did nothing (None)."""
        try:
            return await self._ask(node, method, **args)
        except SessionRefused as exc:
            log.warning("node %s could not %s: %s", node, method, exc)
            return None

    async def _ask(self, node: str, method: str, **args: Any) -> Any:
        request = json.dumps({"method": method, "args": args}).encode()
        try:
            reply = await self._nc.request(act_subject(self._prefix, node), request,
                                           timeout=ACT_TIMEOUT)
        except (NatsTimeout, NoRespondersError):
            raise SessionRefused(f"the session's server node {node} did not answer") from None
        answer = json.loads(reply.data)
        error = answer.get("error")
        if error is not None:
            kind = NotReady if error.get("type") == "NotReady" else SessionRefused
            raise kind(str(error.get("message", "refused")))
        return answer.get("result")


async def act(registry: Registry, method: str, args: dict[str, Any]) -> Any:
    """Carry out another node's request on this node's registry."""
    if method == "admission":
        channel = args.get("channel")
        standing = await registry.admission(str(args["session_id"]), str(args["user_id"]),
                                            channel=Channel(channel) if channel else None)
        return standing.value
    if method == "send_to_agent":
        message = pb.Message.FromString(base64.b64decode(args["message"]))
        kind = message.WhichOneof("payload")
        if kind is None:
            return False
        return await registry.send_to_agent(str(args["agent_id"]), kind, getattr(message, kind))
    if method == "disconnect_session":
        return await registry.disconnect_session(str(args["session_id"]), str(args["reason"]))
    if method == "purge_session":
        return await registry.purge_session(str(args["session_id"]))
    if method == "purge_machine":
        await registry.purge_machine(str(args["agent_id"]))
        return None
    if method == "close_agents_with_key":
        return await registry.close_agents_with_key(str(args["key_id"]), str(args["reason"]))
    if method == "user_changed":
        await registry.user_changed(str(args["user_id"]),
                                    password_changed=bool(args.get("password_changed")),
                                    revoked=(str(args["revoked"]) if args.get("revoked")
                                             else None))
        return None
    raise SessionRefused(f"unknown cluster request {method!r}")

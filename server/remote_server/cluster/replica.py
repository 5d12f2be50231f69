"""The other nodes' live sessions as this node knows them (sans-I/O).

Each node publishes the snapshots of its own sessions as they change; every
node keeps the others' in a replica, so the REST API's questions (is this
machine online, which sessions are live) are answered locally and at once.
"""

from __future__ import annotations

from collections.abc import Iterable, KeysView, Mapping
from datetime import datetime
from typing import Any

from remote_core.records import DEFAULT_TENANT_ID

from ..relay.session import SessionSnapshot

__all__ = ["Replica", "from_wire", "to_wire"]


def to_wire(snapshot: SessionSnapshot) -> dict[str, Any]:
    return {"session_id": snapshot.session_id, "agent_id": snapshot.agent_id,
            "consent_state": snapshot.consent_state, "is_managed": snapshot.is_managed,
            "source": snapshot.source, "technician_id": snapshot.technician_id,
            "created_at": snapshot.created_at.isoformat(),
            "viewer_count": snapshot.viewer_count, "organization": snapshot.organization,
            "technician_name": snapshot.technician_name, "tenant_id": snapshot.tenant_id}


def from_wire(item: Mapping[str, Any]) -> SessionSnapshot:
    return SessionSnapshot(
        session_id=str(item["session_id"]), agent_id=str(item["agent_id"]),
        consent_state=str(item["consent_state"]), is_managed=bool(item["is_managed"]),
        source=str(item["source"]), technician_id=item.get("technician_id"),
        created_at=datetime.fromisoformat(item["created_at"]),
        viewer_count=int(item["viewer_count"]), organization=str(item["organization"]),
        technician_name=str(item.get("technician_name", "")),
        tenant_id=str(item.get("tenant_id") or DEFAULT_TENANT_ID))


class Replica:
    """Snapshots by node; a session id and an agent id find their node."""

    def __init__(self) -> None:
        self._nodes: dict[str, dict[str, SessionSnapshot]] = {}
        self._where: dict[str, str] = {}  # session id -> node
        self._agents: dict[str, set[str]] = {}  # agent id -> its session ids

    def upsert(self, node: str, snapshots: Iterable[SessionSnapshot]) -> None:
        held = self._nodes.setdefault(node, {})
        for snapshot in snapshots:
            held[snapshot.session_id] = snapshot
            self._where[snapshot.session_id] = node
            self._agents.setdefault(snapshot.agent_id, set()).add(snapshot.session_id)

    def remove(self, node: str, session_ids: Iterable[str]) -> None:
        held = self._nodes.get(node, {})
        for session_id in session_ids:
            snapshot = held.pop(session_id, None)
            if snapshot is not None:
                self._forget(snapshot)

    def drop(self, node: str) -> list[SessionSnapshot]:
        """Forget a node that has gone; its sessions, for the clean-up."""
        held = self._nodes.pop(node, {})
        for snapshot in held.values():
            self._forget(snapshot)
        return list(held.values())

    def _forget(self, snapshot: SessionSnapshot) -> None:
        self._where.pop(snapshot.session_id, None)
        ids = self._agents.get(snapshot.agent_id)
        if ids is not None:
            ids.discard(snapshot.session_id)
            if not ids:
                del self._agents[snapshot.agent_id]

    def get(self, session_id: str) -> tuple[str, SessionSnapshot] | None:
        node = self._where.get(session_id)
        if node is None:
            return None
        return node, self._nodes[node][session_id]

    def for_agent(self, agent_id: str) -> tuple[str, SessionSnapshot] | None:
        """The agent's newest session on another node."""
        found = [self.get(session_id) for session_id in self._agents.get(agent_id, ())]
        held = [f for f in found if f is not None]
        return max(held, key=lambda f: f[1].created_at) if held else None

    def agent_ids(self) -> KeysView[str]:
        """The agents with a live session on another node."""
        return self._agents.keys()

    def snapshots(self) -> list[SessionSnapshot]:
        return [s for held in self._nodes.values() for s in held.values()]

    def session_ids(self) -> set[str]:
        return set(self._where)

"""What the operators' API may ask of the live sessions: a small typed protocol.

The REST API reads and acts on live sessions only through this, never through
the registry class, so a deployment of several server processes can answer
it from a shared directory (the database and a message bus) instead of one
process's memory. :class:`~.registry.Registry` is the in-process answer.
"""

from __future__ import annotations

from typing import Any, Protocol

from remote_core.protocol import Channel

from .consent import Standing
from .session import SessionSnapshot

__all__ = ["SessionDirectory"]


class SessionDirectory(Protocol):
    """Live sessions as the REST API sees them: snapshots, and operator actions."""

    def live_sessions(self) -> list[SessionSnapshot]: ...

    def session(self, session_id: str) -> SessionSnapshot | None: ...

    def session_for_agent(self, agent_id: str) -> SessionSnapshot | None: ...

    def is_online(self, agent_id: str) -> bool: ...

    def owner(self, session_id: str) -> str | None:
        """The cluster node holding ``session_id``; None when the server is one process."""
        ...

    async def admission(self, session_id: str, user_id: str, *,
                        channel: Channel | None = None) -> Standing:
        """Where ``user_id`` stands with the session's end user (to view, or for a
        ``channel``: a terminal, files); a first request of another technician asks the end
        user.
        Raises ``NotReady`` or ``SessionRefused``."""
        ...

    async def send_to_agent(self, agent_id: str, kind: str, payload: Any) -> bool:
        """Queue ``payload`` for the agent's live session; False when it has none."""
        ...

    async def disconnect_session(self, session_id: str, reason: str) -> bool: ...

    async def purge_session(self, session_id: str) -> bool: ...

    async def purge_machine(self, agent_id: str) -> None: ...

    async def close_agents_with_key(self, key_id: str, reason: str) -> int: ...

    async def user_changed(self, user_id: str, *, password_changed: bool = False,
                           revoked: str | None = None) -> None:
        """Apply a change to a user's standing to their live viewers at once."""
        ...

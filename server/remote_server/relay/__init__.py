"""The relay: session registry, per-session routing and the backpressure policy.

Built on anyio alone; the Starlette edge (``remote_server.web.ws``) adapts a
WebSocket to :class:`~remote_server.relay.peer.Transport` and hands it over.
"""

from __future__ import annotations

from .auth import NotReady
from .registry import Registry
from .session import SessionSnapshot

__all__ = ["NotReady", "Registry", "SessionSnapshot"]

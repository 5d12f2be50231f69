"""A viewer's socket forwarded to the node that holds its session, node to node.

The viewer's node (the edge) opens the owner's own ``/ws/viewer`` and passes
messages both ways, as a reverse proxy would: the owner serves the viewer
with every rule of one node, and WebSocket flow control carries a slow
viewer's backlog back to the owner's outbox for that viewer, whose policy
drops video to the next keyframe. The edge names the viewer's address in
``X-Forwarded-For`` (the owner believes it when the edge is one of its
``TRUSTED_PROXIES``) and sends no ``Origin``: the edge checked it.
"""

from __future__ import annotations

import logging

import anyio
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from remote_core.protocol import CloseCode

from ..relay.peer import Transport

__all__ = ["forward"]

log = logging.getLogger(__name__)


async def forward(socket: Transport, first: bytes, owner_url: str, *, client_ip: str,
                  session_hint: str | None, limit: int, owner_lost: anyio.Event) -> str:
    """Pass the viewer's socket to ``owner_url``'s and back until either side closes or
    the owner's node goes away; returns why it ended."""
    url = owner_url.replace("http", "ws", 1) + "/ws/viewer"
    if session_hint:
        url += f"?session_id={session_hint}"
    upstream: ClientConnection = await connect(
        url, max_size=limit, compression=None, ping_interval=None, open_timeout=5,
        additional_headers={"X-Forwarded-For": client_ip})
    why = "the viewer left"
    async with upstream, anyio.create_task_group() as group:
        async def to_owner() -> None:
            nonlocal why
            message: bytes | str | None = first
            while message is not None:
                await upstream.send(message)
                message = await socket.receive()
            group.cancel_scope.cancel()

        async def to_viewer() -> None:
            nonlocal why
            try:
                async for message in upstream:
                    await socket.send(message if isinstance(message, bytes)
                                      else message.encode())
            except ConnectionClosed:
                pass
            code, reason = upstream.close_code, upstream.close_reason or ""
            if code in (None, 1005, 1006):  # no close frame: the owner's node is gone
                code = CloseCode.SERVICE_RESTART
                reason = "the session's server node went away"
            why = reason or "closed by the session's node"
            await socket.close(code, reason)
            group.cancel_scope.cancel()

        async def watch_owner() -> None:
            nonlocal why
            await owner_lost.wait()
            why = "the session's server node went away"
            await socket.close(CloseCode.SERVICE_RESTART, why)
            group.cancel_scope.cancel()

        group.start_soon(to_owner)
        group.start_soon(to_viewer)
        group.start_soon(watch_owner)
    return why

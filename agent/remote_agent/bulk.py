"""Bulk data (file transfers) yields to the picture on the agent's one WebSocket.

Video frames, cursor updates and file chunks share one socket, in order: a
frame written after 8 MiB of file data waits until they have crossed the
link. So a file chunk goes out only when

- no urgent message (everything but file data) is being sent or waiting for
  the socket: urgent senders count themselves in, file chunks wait for them;
- no other file chunk is being sent: one chunk (at most 256 KiB) at a time
  for all transfers and viewers together, so an urgent message never has more
  than one chunk of this agent's file data ahead of it in its own send path;
- the kernel holds little unsent on the socket (``SIOCOUTQ``, Linux; elsewhere
  the check is skipped): chunks are not piled into the socket buffer, which
  autotuning grows to megabytes, ahead of the next frame.

No rate is measured or reserved: file data simply takes what the picture
leaves, and the per-transfer window (``FileAck``) bounds what is in flight
beyond the socket.
"""

from __future__ import annotations

import contextlib
import socket
import sys
from collections.abc import Awaitable, Callable

import anyio

__all__ = ["LOW_WATER", "BulkLane", "unsent_bytes"]

LOW_WATER = 64 * 1024
"""Unsent bytes on the socket above which a file chunk waits."""
POLL = 0.005
"""Seconds between looks at the socket's unsent bytes while above :data:`LOW_WATER`."""

SendBytes = Callable[[bytes], Awaitable[None]]


def unsent_bytes(sock: socket.socket | None) -> int:
    """Bytes the kernel has not yet sent on ``sock`` (0 where it cannot be told)."""
    if sock is None or not sys.platform.startswith("linux"):
        return 0
    import fcntl
    import struct
    import termios

    with contextlib.suppress(OSError, ValueError):
        raw = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0")  # SIOCOUTQ
        return int(struct.unpack("i", raw)[0])
    return 0


class BulkLane:
    """Two ways onto one socket: :meth:`urgent` first, :meth:`bulk` in the gaps.

    :param send_bytes: writes one message to the socket.
    :param unsent: the socket's unsent bytes now (default: never any).
    """

    def __init__(self, send_bytes: SendBytes, unsent: Callable[[], int] = lambda: 0) -> None:
        self._send_bytes = send_bytes
        self._unsent = unsent
        self._urgent = 0
        self._calm = anyio.Event()
        self._calm.set()
        self._bulk_lock = anyio.Lock()

    async def urgent(self, data: bytes) -> None:
        """Send ``data`` now (waiting at most for one file chunk already being written)."""
        self._urgent += 1
        self._calm = anyio.Event() if self._calm.is_set() else self._calm
        try:
            await self._send_bytes(data)
        finally:
            self._urgent -= 1
            if not self._urgent:
                self._calm.set()

    async def bulk(self, data: bytes) -> None:
        """Send ``data`` once nothing urgent is under way and the socket is nearly drained."""
        async with self._bulk_lock:
            while True:
                if self._urgent:
                    await self._calm.wait()
                    continue
                if self._unsent() > LOW_WATER:
                    await anyio.sleep(POLL)
                    continue
                break
            await self._send_bytes(data)

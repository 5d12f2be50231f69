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

- the picture is not short of time (:class:`PictureLoad`): while the screen
  moves and its frames take nearly their whole frame time from capture to
  socket, the machine has nothing to spare, and while frames wait for the
  viewers' acknowledgements, those may be queued behind file data (an
  upload's, on its way to the agent); either way a chunk waits a little (at
  most :data:`MOST_YIELD` per chunk, so a transfer slows but never stops).
  The CPU and the queues a transfer takes (reading, hashing, framing; and on
  the server and the technician's side the same again) are then left to the
  picture.

No rate is reserved: file data simply takes what the picture leaves, and the
per-transfer window (``FileAck``) bounds what is in flight beyond the socket.
An upload's acknowledgements go through the lane too, so an upload is paced
the same way from the receiving end.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import time
from collections.abc import Awaitable, Callable

import anyio

__all__ = ["BUSY", "HELD", "LOW_WATER", "MOST_YIELD", "BulkLane", "PictureLoad",
           "unsent_bytes"]

LOW_WATER = 64 * 1024
"""Unsent bytes on the socket above which a file chunk waits."""
POLL = 0.005
"""Seconds between looks at the socket's unsent bytes while above :data:`LOW_WATER`."""

BUSY = 0.9
"""A picture whose frames take this share of their frame time (or more) is short of time."""
MOVING = 0.5
"""Seconds after its last frame that the picture counts as moving."""
HELD = 0.05
"""Seconds after a frame waited for acknowledgements that the picture counts as held."""
MOST_YIELD = 0.1
"""Most seconds a chunk waits for a picture that is short of time."""
YIELD_STEP = 0.01

SendBytes = Callable[[bytes], Awaitable[None]]


class PictureLoad:
    """How hard the screen's stream works: the share of each frame's time (at the stream's
    frame rate) that the frame took from its capture to its last byte in the socket,
    smoothed over a few frames, and whether frames wait for the viewers'
    acknowledgements. No I/O; times are monotonic seconds.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._share = 0.0
        self._at: float | None = None
        self._held_at = -HELD

    def frame(self, seconds: float, interval: float) -> None:
        """A frame took ``seconds`` of a frame time of ``interval``."""
        share = seconds / interval if interval > 0 else 0.0
        self._share = share if self._at is None else 0.7 * self._share + 0.3 * share
        self._at = self._clock()

    def held(self) -> None:
        """A frame is ready to go and waits for the viewers' acknowledgements: they are
        late, and what is late may be queued behind file data on the way."""
        self._held_at = self._clock()

    @property
    def short(self) -> bool:
        """Whether the picture moves now and its frames take nearly all of their time, or
        have waited for acknowledgements within the last frame time or so."""
        now = self._clock()
        if self._at is None or now - self._at >= MOVING:
            return False
        return self._share >= BUSY or now - self._held_at < HELD


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
    :param load: the screen stream's load (default: a picture that never moves).
    """

    def __init__(self, send_bytes: SendBytes, unsent: Callable[[], int] = lambda: 0,
                 load: PictureLoad | None = None) -> None:
        self._send_bytes = send_bytes
        self._unsent = unsent
        self.load = load or PictureLoad()
        self._urgent = 0
        self._calm: anyio.Event | None = None
        """Set when the urgent senders are done: made by a chunk that waits for them (an
        event made per urgent message cost a typed word's frame 0.03 ms on its way)."""
        self._bulk_lock = anyio.Lock()

    async def urgent(self, data: bytes) -> None:
        """Send ``data`` now (waiting at most for one file chunk already being written)."""
        self._urgent += 1
        try:
            await self._send_bytes(data)
        finally:
            self._urgent -= 1
            if not self._urgent and self._calm is not None:
                self._calm.set()
                self._calm = None

    async def bulk(self, data: bytes) -> None:
        """Send ``data`` once nothing urgent is under way, the socket is nearly drained and
        the picture is not short of time (or has been waited for long enough)."""
        async with self._bulk_lock:
            waited = 0.0
            while self.load.short and waited < MOST_YIELD:
                await anyio.sleep(YIELD_STEP)
                waited += YIELD_STEP
            while True:
                if self._urgent:
                    if self._calm is None:
                        self._calm = anyio.Event()
                    await self._calm.wait()
                    continue
                if self._unsent() > LOW_WATER:
                    await anyio.sleep(POLL)
                    continue
                break
            await self._send_bytes(data)

"""A minimal RFB (VNC) 3.8 client over a WebSocket, the reference viewer of ``bench/agent.py``.

It reaches x11vnc through websockify exactly as a browser noVNC client would,
asks for 32-bit BGRX pixels and the best encodings it can decode cheaply
(Zlib, CopyRect, Raw: Zlib is one persistent zlib stream of raw pixels, so
decoding costs one ``decompress`` and a numpy copy per rectangle), and keeps
one incremental ``FramebufferUpdateRequest`` outstanding, which is the RFB
way of flow control.
"""

from __future__ import annotations

import struct
import time
import zlib
from typing import Any

import numpy as np

from remote_core.wsclient import WebSocketClient

__all__ = ["ENCODINGS", "RfbClient"]

RAW, COPYRECT, ZLIB = 0, 1, 6
ENCODINGS = (ZLIB, COPYRECT, RAW)
ENCODING_NAMES = {RAW: "Raw", COPYRECT: "CopyRect", ZLIB: "Zlib"}


class RfbClient:
    """Frame buffer kept as a ``(h, w, 4)`` BGRX array; :meth:`update` applies one update."""

    def __init__(self, ws: WebSocketClient) -> None:
        self._ws = ws
        self._buffer = bytearray()
        self._zlib = zlib.decompressobj()
        self.width = self.height = 0
        self.image: Any = None
        self.bytes_received = 0
        self.updates = 0

    async def close(self) -> None:
        await self._ws.close()

    async def _read(self, count: int) -> bytes:
        while len(self._buffer) < count:
            data = await self._ws.receive()
            if isinstance(data, str):
                raise ValueError("websockify sent text; expected binary frames")
            self.bytes_received += len(data)
            self._buffer += data
        chunk = bytes(self._buffer[:count])
        del self._buffer[:count]
        return chunk

    async def handshake(self) -> None:
        version = await self._read(12)
        if not version.startswith(b"RFB 003."):
            raise ValueError(f"not an RFB server: {version!r}")
        await self._ws.send(b"RFB 003.008\n")
        (count,) = await self._read(1)
        types = await self._read(count)
        if 1 not in types:
            raise ValueError(f"the server offers no unauthenticated access: {list(types)}")
        await self._ws.send(bytes([1]))
        (result,) = struct.unpack(">I", await self._read(4))
        if result != 0:
            raise ValueError("RFB security handshake failed")
        await self._ws.send(bytes([1]))  # ClientInit: shared
        self.width, self.height = struct.unpack(">HH", await self._read(4))
        await self._read(16)  # the server's pixel format: ours replaces it
        (name_length,) = struct.unpack(">I", await self._read(4))
        await self._read(name_length)
        self.image = np.zeros((self.height, self.width, 4), np.uint8)
        # 32 bpp, depth 24, little-endian, true colour, max 255, shifts R16 G8 B0: BGRX bytes
        pixel_format = struct.pack(">BBBBHHHBBB3x", 32, 24, 0, 1, 255, 255, 255, 16, 8, 0)
        await self._ws.send(b"\x00\x00\x00\x00" + pixel_format)
        await self._ws.send(struct.pack(">BxH", 2, len(ENCODINGS))
                            + b"".join(struct.pack(">i", e) for e in ENCODINGS))
        await self.request(incremental=False)

    async def request(self, incremental: bool = True) -> None:
        await self._ws.send(struct.pack(">BBHHHH", 3, int(incremental), 0, 0,
                                        self.width, self.height))

    async def update(self) -> int:
        """Read messages until one frame-buffer update is applied; return its time (ns)."""
        while True:
            (kind,) = await self._read(1)
            if kind == 0:
                await self._frame_update()
                self.updates += 1
                return time.perf_counter_ns()
            if kind == 1:  # colour map entries: unused with true colour
                _, _, count = struct.unpack(">BHH", await self._read(5))
                await self._read(count * 6)
            elif kind == 2:  # bell
                continue
            elif kind == 3:  # server cut text
                await self._read(3)
                (length,) = struct.unpack(">I", await self._read(4))
                await self._read(length)
            else:
                raise ValueError(f"unknown RFB server message {kind}")

    async def _frame_update(self) -> None:
        (_, count) = struct.unpack(">BH", await self._read(3))
        for _ in range(count):
            x, y, w, h, encoding = struct.unpack(">HHHHi", await self._read(12))
            if encoding == RAW:
                pixels = await self._read(w * h * 4)
            elif encoding == ZLIB:
                (length,) = struct.unpack(">I", await self._read(4))
                pixels = self._zlib.decompress(await self._read(length))
            elif encoding == COPYRECT:
                sx, sy = struct.unpack(">HH", await self._read(4))
                self.image[y:y + h, x:x + w] = self.image[sy:sy + h, sx:sx + w].copy()
                continue
            else:
                raise ValueError(f"unexpected RFB encoding {encoding}")
            self.image[y:y + h, x:x + w] = np.frombuffer(pixels, np.uint8).reshape(h, w, 4)

"""What X11 tells us without polling: monitors (RandR 1.5) and changed areas (DAMAGE)."""

from __future__ import annotations

import contextlib
import logging
import os
import select
import socket
import struct
import threading
from typing import Any

from remote_core.types import DisplayDesc, Rect

log = logging.getLogger(__name__)

__all__ = ["DamageWatcher", "MonitorQuery", "damage_areas"]

_PACKET = 32
"""Every event and error is 32 bytes; a reply or a generic event says how many more."""
_DAMAGE_NOTIFY = struct.Struct("=B15xhhHH8x")
"""A DamageNotify's type and ``area`` (x, y, width, height), in the connection's byte
order: the client's own (python-xlib asks for it)."""
_LONGER = (1, 35)  # a reply, a GenericEvent: 4-byte units follow, counted at offset 4
_LENGTH = struct.Struct("=4xI")


def damage_areas(data: bytes | bytearray, notify: int) -> tuple[list[Rect], int]:
    """The areas of the DamageNotify events (type ``notify``) in the whole packets at the
    start of ``data``, what the X server sends, and how many bytes those packets take
    (a packet cut short waits for the rest). Anything else (no other event is selected
    on the connection) is passed over, an error logged."""
    rects: list[Rect] = []
    offset, end = 0, len(data)
    while end - offset >= _PACKET:
        kind = data[offset] & 0x7F  # the top bit: sent with SendEvent
        size = _PACKET
        if kind in _LONGER:
            size += 4 * _LENGTH.unpack_from(data, offset)[0]
            if end - offset < size:
                break
        elif kind == notify:
            _, x, y, width, height = _DAMAGE_NOTIFY.unpack_from(data, offset)
            rects.append(Rect(x, y, width, height))
        elif kind == 0:
            log.debug("X error %d on the damage connection", data[offset + 1])
        offset += size
    return rects, offset


def _open_display() -> Any | None:
    if not os.environ.get("DISPLAY"):
        return None
    try:
        from Xlib import display

        return display.Display()
    except Exception:
        return None


class MonitorQuery:
    """The RandR monitors (``xrandr --setmonitor`` ones included) over one kept connection,
    so asking every few seconds costs one request, not a connection set-up."""

    def __init__(self) -> None:
        self._conn = _open_display()
        if self._conn is not None and not self._conn.has_extension("RANDR"):
            self._conn.close()
            self._conn = None

    def monitors(self) -> list[DisplayDesc] | None:
        """The monitors, or ``None`` off X11 (or when RandR cannot say)."""
        if self._conn is None:
            return None
        from Xlib.ext import randr

        try:
            found = randr.get_monitors(self._conn.screen().root, is_active=True).monitors
            out = []
            for index, mon in enumerate(found, start=1):
                name = self._conn.get_atom_name(mon["name"]) if mon["name"] else ""
                out.append(DisplayDesc(id=index, name=name or f"Monitor {index}", x=mon["x"],
                                       y=mon["y"], width=mon["width_in_pixels"],
                                       height=mon["height_in_pixels"],
                                       is_primary=bool(mon["primary"])))
            return out or None
        except Exception:
            log.debug("RandR monitor query failed", exc_info=True)
            return None

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()


class DamageWatcher:
    """Collects the root window's DAMAGE reports; :meth:`wait` blocks until there are some.

    Raw-rectangle reports need no ``DamageSubtract`` round trip, and an
    unchanged screen produces no traffic at all: waiting costs nothing. Once the damage
    is subscribed, the connection only brings reports, read straight off its socket
    (:func:`damage_areas`): python-xlib's reading of one took 0.15 ms of a typed word's way.
    """

    def __init__(self) -> None:
        conn = _open_display()
        if conn is None or not conn.has_extension("DAMAGE"):
            if conn is not None:
                conn.close()
            raise OSError("the X DAMAGE extension is not available")
        from Xlib.ext import damage

        self._conn = conn
        self._conn.damage_query_version()
        self._damage = conn.screen().root.damage_create(damage.DamageReportRawRectangles)
        self._conn.flush()  # python-xlib has read all it asked for: what comes now is damage
        self._socket: socket.socket = conn.display.socket
        self._notify: int = conn.extension_event.DamageNotify
        self._unread = bytearray()  # a packet the socket has given part of
        self._pending: list[Rect] = []
        self._lock = threading.Lock()
        self._poke_read, self._poke_write = os.pipe()  # interrupt() wakes a wait
        os.set_blocking(self._poke_read, False)
        os.set_blocking(self._poke_write, False)

    def _drain(self) -> None:
        while True:
            try:
                data = self._socket.recv(65536, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return
            if not data:
                raise ConnectionError("the X server closed the connection")
            self._unread += data
            rects, used = damage_areas(self._unread, self._notify)
            del self._unread[:used]
            self._pending += rects

    def wait(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds for damage; ``True`` when some is pending."""
        with self._lock:
            self._drain()
            if self._pending:
                return True
        ready, _, _ = select.select([self._conn.fileno(), self._poke_read], [], [],
                                    max(timeout, 0.0))
        if self._poke_read in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(self._poke_read, 4096)
        with self._lock:
            if self._conn.fileno() in ready:
                self._drain()
            return bool(self._pending)

    def fileno(self) -> int:
        """The X connection's socket: readable when events (damage) may have come."""
        return int(self._conn.fileno())

    def pending(self) -> list[Rect]:
        """The rectangles reported since the last :meth:`take`, left for it."""
        with self._lock:
            self._drain()
            return list(self._pending)

    def interrupt(self) -> None:
        """End a :meth:`wait` in another thread now (or the next one, if none waits)."""
        with self._lock, contextlib.suppress(OSError):  # BlockingIOError: one is pending
            if self._poke_write >= 0:  # never a closed descriptor, maybe reused since
                os.write(self._poke_write, b"!")

    def take(self) -> list[Rect]:
        """The rectangles reported since the last call (root coordinates)."""
        with self._lock:
            self._drain()
            taken, self._pending = self._pending, []
        return taken

    def close(self) -> None:
        with contextlib.suppress(Exception):  # the X server may already be gone
            self._damage.destroy()
            self._conn.close()
        with self._lock:
            for fd in (self._poke_read, self._poke_write):
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._poke_read = self._poke_write = -1

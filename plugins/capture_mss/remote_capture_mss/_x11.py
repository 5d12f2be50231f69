"""What X11 tells us without polling: monitors (RandR 1.5) and changed areas (DAMAGE)."""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
import select
import socket
import struct
import threading
from array import array
from typing import Any, NamedTuple

from remote_core.types import DisplayDesc, Rect

log = logging.getLogger(__name__)

__all__ = ["DamageWatcher", "MonitorQuery", "Packets", "read_packets"]

_PACKET = 32
"""Every event and error is 32 bytes; a reply or a generic event says how many more."""
_DAMAGE_NOTIFY = struct.Struct("=B15xhhHH8x")
"""A DamageNotify's type and ``area`` (x, y, width, height), in the connection's byte
order: the client's own (python-xlib asks for it)."""
_REPLY, _ERROR = 1, 0
_LONGER = (_REPLY, 35)  # a reply, a GenericEvent: 4-byte units follow, counted at offset 4
_LENGTH = struct.Struct("=4xI")
_SEQUENCE = struct.Struct("=2xH")
_GET_IMAGE = struct.Struct("=BBHIhhHHI")
"""GetImage (opcode 73) in ZPixmap format (2), 5 units long: drawable, x, y, width,
height, plane mask."""
_IMAGE_HEADER = 32
"""A GetImage reply's bytes before its pixels."""
_SHM_QUERY_VERSION = struct.Struct("=BBH")
_SHM_VERSION = struct.Struct("=8xHH")
"""A ShmQueryVersion reply's major and minor version (AttachFd needs 1.2)."""
_SHM_ATTACH_FD = struct.Struct("=BBHIB3x")
"""ShmAttachFd (minor 6), 3 units: the segment's id, read-only; the descriptor goes with
it."""
_SHM_GET_IMAGE = struct.Struct("=BBHIhhHHIB3xII")
"""ShmGetImage (minor 4) in ZPixmap format (2), 8 units: drawable, x, y, width, height,
plane mask, format, segment, offset."""
_SHM_IMAGE_SIZE = struct.Struct("=12xI")
"""The size of the image a ShmGetImage reply says it wrote."""
_READ = 65536
"""The most bytes one read of the socket takes."""
_ANSWER_WAIT_MS = 5000
"""Longest wait for the X server's answer to a grab (it takes milliseconds; an event loop
watching the socket has made it non-blocking, so the wait is a poll)."""


class Packets(NamedTuple):
    """What :func:`read_packets` found at the start of what the X server sent."""

    rects: list[Rect]
    """The areas of the DamageNotify events."""
    used: int
    """The bytes of the whole packets read (a packet cut short waits for the rest)."""
    answer: slice | None = None
    """Where the reply to (or the error of) the request asked about is: reading stops
    after it."""


def read_packets(data: bytes | bytearray, notify: int, serial: int | None = None) -> Packets:
    """The DamageNotify events (type ``notify``) in the whole packets at the start of
    ``data``, and, when ``serial`` is given, the reply or error to that request (its
    sequence number). Anything else (no other event is selected on the connection) is
    passed over, an error logged."""
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
        if (kind in (_REPLY, _ERROR) and serial is not None
                and _SEQUENCE.unpack_from(data, offset)[0] == serial):
            return Packets(rects, offset + size, slice(offset, offset + size))
        if kind == _ERROR:
            log.debug("X error %d on the damage connection", data[offset + 1])
        offset += size
    return Packets(rects, offset)


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
    Also grabs small areas of the screen (:meth:`get_image`) on the same connection.

    Raw-rectangle reports need no ``DamageSubtract`` round trip, and an
    unchanged screen produces no traffic at all: waiting costs nothing. Once the damage
    is subscribed, python-xlib is done with the connection: the reports are read
    straight off its socket (:func:`read_packets`; python-xlib's reading of one took 0.15
    ms of a typed word's way), and a grab is one GetImage written to it, its answer read
    among the reports (0.08 ms sooner than mss's MIT-SHM grab of a typed word). A large
    area is grabbed on it too, into memory shared with the X server (MIT-SHM) when the
    server is on this machine: the pixels are read where the server wrote them, where mss
    copies them out first and builds its screenshot (a scrolled page of 1432x774, grabbed
    and its rows compared and copied in: 2.9 against 3.5 ms).
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
        screen = conn.screen()
        root = screen.root
        self._damage = root.damage_create(damage.DamageReportRawRectangles)
        shm = conn.query_extension("MIT-SHM")
        shm_opcode: int | None = shm.major_opcode if shm is not None else None
        segment: int = conn.display.allocate_resource_id()
        self._conn.flush()  # python-xlib has read all it asked for: what comes now is damage
        self._root: int = root.id
        self._serial: int = conn.display.request_serial - 1  # the last request's number
        self._socket: socket.socket = conn.display.socket
        self._readable = select.poll()
        self._readable.register(self._socket, select.POLLIN)
        self._notify: int = conn.extension_event.DamageNotify
        self._unread = bytearray()  # a packet the socket has given part of
        self._pending: list[Rect] = []
        self._lock = threading.Lock()
        self._poke_read, self._poke_write = os.pipe()  # interrupt() wakes a wait
        os.set_blocking(self._poke_read, False)
        os.set_blocking(self._poke_write, False)
        self._shared: mmap.mmap | None = None  # the memory ShmGetImage writes into
        self._shm_opcode, self._segment = shm_opcode, segment
        if shm_opcode is not None:
            with self._lock:
                self._shared = self._share(screen.width_in_pixels * screen.height_in_pixels * 4)

    def _share(self, size: int) -> mmap.mmap | None:
        """Memory of ``size`` bytes the X server writes grabs into, attached as this
        connection's segment; ``None`` when the server cannot (another machine's, or one
        without MIT-SHM 1.2's descriptors)."""
        opcode = self._shm_opcode
        assert opcode is not None
        version = self._ask(_SHM_QUERY_VERSION.pack(opcode, 0, 1))
        if version is None or _SHM_VERSION.unpack_from(version) < (1, 2):
            log.info("large grabs go through mss: MIT-SHM 1.2 is not there")
            return None
        fd, shared = -1, None
        try:
            fd = os.memfd_create("remote-capture", os.MFD_CLOEXEC)
            os.ftruncate(fd, size)
            shared = mmap.mmap(fd, size, prot=mmap.PROT_READ)
            self._socket.sendmsg([_SHM_ATTACH_FD.pack(opcode, 6, 3, self._segment, 0)],
                                 [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array("i", [fd]))])
            # Counted once sent (a send that fails sends nothing). Over TCP the request goes
            # without the descriptor, and the server's refusal shows in the grab below.
            self._serial = (self._serial + 1) & 0xFFFF
            self._shared = shared
            if self._shared_image(0, 0, 1, 1) is None:
                raise OSError("the X server did not attach the memory")
        except (OSError, AttributeError) as exc:  # AttributeError: no memfd_create
            log.info("large grabs go through mss: %s", exc)
            self._shared = None
            if shared is not None:
                shared.close()
            return None
        finally:
            if fd >= 0:
                os.close(fd)  # the server holds its own
        return shared

    def _ask(self, request: bytes) -> bytearray | None:
        """Write one request and read up to its reply (the reports before it are kept):
        the reply's packet, or ``None`` for an error. Called with the lock held."""
        self._serial = (self._serial + 1) & 0xFFFF
        self._socket.sendall(request)
        while True:
            found = read_packets(self._unread, self._notify, self._serial)
            self._pending += found.rects
            if found.answer is not None:
                break
            del self._unread[:found.used]
            if not self._readable.poll(_ANSWER_WAIT_MS):
                raise TimeoutError(f"the X server did not answer request {request[0]} in "
                                   f"{_ANSWER_WAIT_MS} ms")
            self._receive()
        start, stop = found.answer.start, found.answer.stop
        packet = self._unread[start:stop] if self._unread[start] == _REPLY else None
        del self._unread[:found.used]
        # Reports read with the answer, of what was drawn after the grab: pending now, as
        # the socket may stay quiet (a still screen) and nothing else would read them.
        after = read_packets(self._unread, self._notify)
        self._pending += after.rects
        del self._unread[:after.used]
        return packet

    def _drain(self) -> None:
        """Read what the server has sent, never waiting. A poll asks first, as a read of
        nothing raises (0.03 ms of a typed word's way, cold), and a read short of
        :data:`_READ` is all there was."""
        while self._readable.poll(0):
            data = self._receive()
            found = read_packets(self._unread, self._notify)
            del self._unread[:found.used]
            self._pending += found.rects
            if len(data) < _READ:
                return

    def _receive(self) -> bytes:
        data = self._socket.recv(_READ, socket.MSG_DONTWAIT)
        if not data:
            raise ConnectionError("the X server closed the connection")
        self._unread += data
        return data

    def get_image(self, x: int, y: int, width: int, height: int, *,
                  shared: bool = False) -> bytearray | memoryview | None:
        """The pixels of an area of the root window (root coordinates), BGRA row after
        row; ``None`` when the server refuses or its pixels are not 4 bytes each (the
        caller asks mss then). The reports that come before the answer are kept.

        ``shared``: read them where the X server wrote them, in the memory shared with it
        (a view, good until the next grab); ``None`` when there is none."""
        with self._lock:
            if shared:
                return self._shared_image(x, y, width, height)
            packet = self._ask(_GET_IMAGE.pack(73, 2, 5, self._root, x, y, width, height,
                                               0xFFFFFFFF))
        if packet is None or len(packet) != _IMAGE_HEADER + width * height * 4:
            log.debug("GetImage of %dx%d at %d,%d: not 32-bit pixels, or refused", width,
                      height, x, y)
            return None
        del packet[:_IMAGE_HEADER]
        return packet

    def _shared_image(self, x: int, y: int, width: int, height: int) -> memoryview | None:
        """ShmGetImage of an area into the shared memory: a view of its pixels. Called
        with the lock held."""
        shared, size = self._shared, width * height * 4
        if shared is None or size > len(shared):
            return None
        assert self._shm_opcode is not None
        packet = self._ask(_SHM_GET_IMAGE.pack(self._shm_opcode, 4, 8, self._root, x, y, width,
                                               height, 0xFFFFFFFF, 2, self._segment, 0))
        if packet is None or _SHM_IMAGE_SIZE.unpack_from(packet)[0] != size:
            log.debug("ShmGetImage of %dx%d at %d,%d: not 32-bit pixels, or refused", width,
                      height, x, y)
            return None
        return memoryview(shared)[:size]

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
            if self._shared is not None:
                with contextlib.suppress(BufferError):  # a view still held: the GC unmaps
                    self._shared.close()
            for fd in (self._poke_read, self._poke_write):
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._poke_read = self._poke_write = -1

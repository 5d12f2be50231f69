"""DAMAGE reports read straight off the X connection: the packets, and the server's end."""

from __future__ import annotations

import struct
import time

import pytest
from remote_capture_mss import MssCapture
from remote_capture_mss._x11 import damage_areas

from remote_core.testing.xvfb import Painter, Xvfb
from remote_core.types import Rect

NOTIFY = 91  # the DamageNotify type: the extension's first event number on some server


def notify(x: int, y: int, width: int, height: int, *, sent: bool = False) -> bytes:
    """A DamageNotify as the X server writes it (the client's byte order)."""
    return struct.pack("=BBHIIIhhHHhhHH", NOTIFY | (0x80 if sent else 0), 0, 7, 0x123, 0x456,
                       99, x, y, width, height, 0, 0, 640, 480)


def test_the_areas_of_whole_reports_are_read_and_a_cut_one_waits():
    error = bytes([0, 3]) + bytes(30)
    reply = struct.pack("=BBHI", 1, 0, 8, 2) + bytes(24) + bytes(8)  # 2 more 4-byte units
    data = notify(1, 2, 3, 4) + error + reply + notify(-5, 6, 70, 80, sent=True)
    later = notify(10, 20, 30, 40)
    rects, used = damage_areas(data + later[:20], NOTIFY)
    assert rects == [Rect(1, 2, 3, 4), Rect(-5, 6, 70, 80)]
    assert used == len(data)
    assert damage_areas(later[:20], NOTIFY) == ([], 0)
    assert damage_areas(later, NOTIFY) == ([Rect(10, 20, 30, 40)], 32)


def test_a_reply_cut_short_is_waited_for_whole():
    reply = struct.pack("=BBHI", 1, 0, 8, 4) + bytes(24) + bytes(16)
    assert damage_areas(reply[:40], NOTIFY) == ([], 0)
    assert damage_areas(reply + notify(0, 0, 1, 1), NOTIFY) == ([Rect(0, 0, 1, 1)], 80)


@pytest.mark.xvfb
def test_reports_arriving_in_pieces_and_the_server_going_away(monkeypatch):
    """Many reports at once come in more than one read; when the X server ends, waiting
    for a change is an error, not a still screen."""
    server = Xvfb(640, 480).start()
    try:
        monkeypatch.setenv("DISPLAY", server.display)
        capture = MssCapture()
        try:
            capture.grab(1)
            painter = Painter(server.display)
            try:
                for i in range(3000):  # 96 KB of reports: more than one read of the socket
                    painter.fill(i % 600, (i // 600) * 20, 1, 1, 0xFFFFFF)
                painter.sync()
            finally:
                painter.close()
            assert capture.wait_for_change(2.0)
            time.sleep(0.2)  # every report in
            assert capture.pending_pixels() == 5 * 600  # five rows of touching pixels
            server.stop()
            with pytest.raises(ConnectionError):
                capture.wait_for_change(2.0)
        finally:
            capture.close()
    finally:
        server.stop()

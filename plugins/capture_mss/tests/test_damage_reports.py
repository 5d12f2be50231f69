"""DAMAGE reports read straight off the X connection, and small grabs asked for on it: the
packets, the answers among the reports, and the server's end."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import time

import mss
import pytest
from remote_capture_mss import MssCapture
from remote_capture_mss._x11 import DamageWatcher, Packets, read_packets

from remote_core.testing.xvfb import Painter, Xvfb
from remote_core.types import Rect

NOTIFY = 91  # the DamageNotify type: the extension's first event number on some server


def notify(x: int, y: int, width: int, height: int, *, sent: bool = False) -> bytes:
    """A DamageNotify as the X server writes it (the client's byte order)."""
    return struct.pack("=BBHIIIhhHHhhHH", NOTIFY | (0x80 if sent else 0), 0, 7, 0x123, 0x456,
                       99, x, y, width, height, 0, 0, 640, 480)


def reply(units: int, serial: int = 8) -> bytes:
    """A reply with ``units`` 4-byte units after its 32 bytes."""
    return struct.pack("=BBHI", 1, 0, serial, units) + bytes(24) + bytes(4 * units)


def test_the_areas_of_whole_reports_are_read_and_a_cut_one_waits():
    error = bytes([0, 3]) + bytes(30)
    data = notify(1, 2, 3, 4) + error + reply(2) + notify(-5, 6, 70, 80, sent=True)
    later = notify(10, 20, 30, 40)
    rects, used, answer = read_packets(data + later[:20], NOTIFY)
    assert rects == [Rect(1, 2, 3, 4), Rect(-5, 6, 70, 80)]
    assert (used, answer) == (len(data), None)
    assert read_packets(later[:20], NOTIFY) == Packets([], 0)
    assert read_packets(later, NOTIFY) == Packets([Rect(10, 20, 30, 40)], 32)


def test_a_reply_cut_short_is_waited_for_whole():
    assert read_packets(reply(4)[:40], NOTIFY) == Packets([], 0)
    assert read_packets(reply(4) + notify(0, 0, 1, 1), NOTIFY) == Packets([Rect(0, 0, 1, 1)], 80)


def test_the_answer_to_a_request_ends_the_reading_where_it_ends():
    """Reports before the answer are read, those after it wait; another request's reply
    or error is passed over, the asked one's error is its answer too."""
    before, answer = notify(1, 1, 1, 1) + reply(1, serial=7), reply(3, serial=8)
    data = before + answer + notify(2, 2, 2, 2)
    found = read_packets(data, NOTIFY, serial=8)
    assert found == Packets([Rect(1, 1, 1, 1)], len(before) + len(answer),
                            slice(len(before), len(before) + len(answer)))
    assert read_packets(before + answer[:40], NOTIFY, serial=8) == Packets(
        [Rect(1, 1, 1, 1)], len(before))
    error = bytes([0, 8]) + struct.pack("=H", 9) + bytes(28)
    assert read_packets(error + answer, NOTIFY, serial=9) == Packets([], 32, slice(0, 32))


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


@pytest.mark.xvfb
def test_a_grab_on_the_damage_connection_is_what_mss_grabs(monkeypatch):
    """The pixels asked for on the damage connection are mss's to the byte, the reports
    that come before the answer are kept, and an area off the screen is refused (the
    capture asks mss then)."""
    server = Xvfb(640, 480).start()
    try:
        monkeypatch.setenv("DISPLAY", server.display)
        watcher = DamageWatcher()
        os.set_blocking(watcher.fileno(), False)  # as the agent's event loop leaves it
        try:
            with mss.MSS() as shots:
                painter = Painter(server.display)
                pixels = (bytes(range(256)) * 19)[:60 * 20 * 4]
                painter.put_bgra(10, 20, 60, 20, pixels)
                painter.fill(200, 100, 5, 5, 0x123456)
                painter.sync()
                painter.close()
                area = {"left": 5, "top": 15, "width": 300, "height": 100}
                assert watcher.get_image(5, 15, 300, 100) == shots.grab(area).raw
                assert Rect(200, 100, 5, 5) in watcher.take()  # reported before the answer
                assert watcher.get_image(600, 400, 100, 100) is None  # past the edge
                assert watcher.get_image(0, 0, 1, 1) == shots.grab(
                    {"left": 0, "top": 0, "width": 1, "height": 1}).raw  # still in step
            server.stop()
            with pytest.raises(ConnectionError):
                watcher.get_image(0, 0, 1, 1)
        finally:
            watcher.close()
    finally:
        server.stop()


@pytest.mark.xvfb
def test_a_report_read_with_the_answer_is_pending_at_once(monkeypatch):
    """What is drawn just after the X server answered a grab is reported in the same read
    of the socket as the answer. It is pending at once: with the screen still after it,
    nothing more comes to read, and the viewers would keep the old pixels."""
    server = Xvfb(640, 480).start()
    try:
        monkeypatch.setenv("DISPLAY", server.display)
        watcher = DamageWatcher()
        os.set_blocking(watcher.fileno(), False)
        painter = Painter(server.display)
        receive = watcher._receive

        def drawn_once_answered() -> bytes:
            """The answer is in the socket (the grab is done): draw, and read the answer
            with the report of the drawing behind it."""
            monkeypatch.setattr(watcher, "_receive", receive)
            painter.fill(300, 200, 10, 10, 0xFFFFFF)
            painter.sync()
            deadline = time.monotonic() + 5
            while len(watcher._socket.recv(4096, socket.MSG_PEEK)) < 36 + 32:
                assert time.monotonic() < deadline, "no report came behind the answer"
                time.sleep(0.001)
            return receive()

        try:
            assert not watcher.wait(0)
            monkeypatch.setattr(watcher, "_receive", drawn_once_answered)
            assert watcher.get_image(0, 0, 1, 1) is not None  # a 36-byte answer
            assert watcher.wait(0)
            assert watcher.take() == [Rect(300, 200, 10, 10)]
        finally:
            painter.close()
            watcher.close()
    finally:
        server.stop()


@pytest.mark.xvfb
def test_a_large_grab_in_memory_shared_with_the_server_is_what_mss_grabs(monkeypatch):
    """Where the X server shares memory with the agent, a large area's pixels are read
    where it wrote them: mss's to the byte, an area off the screen refused."""
    server = Xvfb(640, 480).start()
    try:
        monkeypatch.setenv("DISPLAY", server.display)
        watcher = DamageWatcher()
        os.set_blocking(watcher.fileno(), False)
        try:
            with mss.MSS() as shots:
                painter = Painter(server.display)
                pattern = bytes(range(7, 256)) * 5000
                painter.put_bgra(0, 0, 640, 480, pattern[:640 * 480 * 4])
                painter.sync()
                painter.close()
                for x, y, width, height in ((0, 0, 640, 480), (33, 17, 500, 301)):
                    pixels = watcher.get_image(x, y, width, height, shared=True)
                    assert isinstance(pixels, memoryview)
                    assert pixels == shots.grab({"left": x, "top": y, "width": width,
                                                 "height": height}).raw
                    del pixels
                assert watcher.get_image(600, 400, 100, 100, shared=True) is None
                assert watcher.get_image(0, 0, 2, 2) == shots.grab(
                    {"left": 0, "top": 0, "width": 2, "height": 2}).raw  # still in step
        finally:
            watcher.close()
    finally:
        server.stop()


NO_SHARED_MEMORY = """
from remote_capture_mss import MssCapture
from remote_core.testing.xvfb import Painter
from remote_core.types import Rect

capture = MssCapture()
capture.grab(1)
assert capture._watcher is not None
assert capture._watcher.get_image(0, 0, 400, 300, shared=True) is None
pattern = bytes(range(3, 250)) * 2000
painter = Painter()
painter.put_bgra(10, 10, 400, 300, pattern[:400 * 300 * 4])
painter.sync()
assert capture.wait_for_change(2.0)
image, dirty = capture.grab(1)
assert dirty == [Rect(10, 10, 400, 300)], dirty
rows = bytes(image)
assert all(rows[((10 + y) * 640 + 10) * 4:((10 + y) * 640 + 410) * 4]
           == pattern[y * 1600:(y + 1) * 1600] for y in range(300))
capture.close()
"""


@pytest.mark.xvfb
def test_a_server_that_shares_no_memory_is_grabbed_through_mss():
    """An X server without MIT-SHM (one on another machine is so to its clients): the
    damage connection has no shared grab, and the capture's large grabs are mss's. (In a
    process of its own: python-xlib keeps the extensions' event numbers per process, and
    this server's differ.)"""
    server = Xvfb(640, 480, extensions_off=("MIT-SHM",)).start()
    try:
        done = subprocess.run([sys.executable, "-c", NO_SHARED_MEMORY], env=server.env(),
                              capture_output=True, text=True, timeout=60)
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr

"""Where a change's time goes between the processes of a stack (``bench/browser.py`` with
``BENCH_HOPS=1``): when the sender's bytes left it and when the relay's did (packets on
loopback, captured with ``tcpdump``, root only), when the page's socket had them (its
``message`` events, recorded by a script the browser runs before the page's own), and how
long the page's own ``onmessage`` took over them (both pages decode and draw a picture
there).

Each is the p50, over a scenario's changes, of the first such moment after the driver
started the change, in ms from then: the same clock as the benchmark's latency. That
first moment is the change's own only while a change takes less than the time between
two (a typed word, a scroll): a full screen 60 ms on its way has earlier changes'
pictures passing meanwhile, and its columns read some 15 ms, half the time between
changes, whatever its way costs. The capture itself costs the processes it watches: a
run's CPU columns read higher with it (the agent's typing 5.1 % against 3.8 % in one
pair of runs).
"""

from __future__ import annotations

import bisect
import os
import shutil
import statistics
import struct
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from remote_core.testing.processes import stop_process

__all__ = ["PAGE_SCRIPT", "Packets", "hop_columns", "read_pcap"]

SMALL = 60
"""Payloads up to this many bytes are not a picture: acks, requests, heartbeats."""

WITHIN_MS = 30.0
"""A moment later than this after a change belongs to a later one (30 changes/s)."""

PAGE_SCRIPT = """(() => {
  const Socket = window.WebSocket;
  const arrivals = window.__benchArrivals = [];
  const handled = window.__benchHandled = [];
  const size = (event) => event.data.byteLength ?? event.data.size ?? event.data.length;
  const setHandler = Object.getOwnPropertyDescriptor(Socket.prototype, "onmessage").set;
  const Recorded = function (...args) {
    const socket = new Socket(...args);
    socket.addEventListener("message", (event) => {
      if (size(event) > SMALL) arrivals.push(performance.timeOrigin + performance.now());
    });
    Object.defineProperty(socket, "onmessage", { set(handler) {
      setHandler.call(socket, typeof handler !== "function" ? handler : (event) => {
        const started = performance.now();
        try {
          return handler(event);
        } finally {
          if (size(event) > SMALL) handled.push(performance.now() - started);
        }
      });
    } });
    return socket;
  };
  Recorded.prototype = Socket.prototype;
  Object.assign(Recorded, { CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3 });
  window.WebSocket = Recorded;
})();""".replace("SMALL", str(SMALL))
"""Records the wall-clock ms of every message over :data:`SMALL` bytes on the page's
sockets, before the page's own handlers run, and the ms its ``onmessage`` took over it
(the clock is the page's, which Chromium coarsens to 0.1 ms, with jitter: the p50 reads
in steps of 0.1)."""

TAKE_ARRIVALS = ("() => [(window.__benchArrivals || []).splice(0), "
                 "(window.__benchHandled || []).splice(0)]")

Packet = tuple[float, int, int, int]
"""Wall-clock ms, source port, destination port, TCP payload bytes."""


class Packets:
    """TCP on the loopback interface, from entering the block to leaving it (nothing, and
    :attr:`available` false, without ``tcpdump`` or root)."""

    available = shutil.which("tcpdump") is not None and os.geteuid() == 0

    def __init__(self) -> None:
        self.packets: list[Packet] = []
        self._pcap: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Packets:
        if self.available:
            self._pcap = Path(tempfile.mkdtemp(prefix="bench-hops-")) / "lo.pcap"
            self._process = subprocess.Popen(
                ["tcpdump", "-i", "lo", "-s", "100", "--time-stamp-precision=nano", "-U",
                 "-w", str(self._pcap), "tcp"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.0)  # tcpdump listening before the first change
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._process is None or self._pcap is None:
            return
        time.sleep(0.2)
        stop_process(self._process)
        self.packets = read_pcap(self._pcap)
        shutil.rmtree(self._pcap.parent, ignore_errors=True)


def read_pcap(path: Path) -> list[Packet]:
    """The IPv4 TCP packets of a pcap file of an Ethernet-framed interface (Linux's lo)."""
    data = path.read_bytes() if path.exists() else b""
    if len(data) < 24:
        return []
    nano = struct.unpack_from("<I", data)[0] == 0xA1B23C4D
    out, offset = [], 24
    while offset + 16 <= len(data):
        seconds, fraction, size, _ = struct.unpack_from("<IIII", data, offset)
        frame = data[offset + 16:offset + 16 + size]
        offset += 16 + size
        ip = frame[14:]
        if len(ip) < 20 or ip[0] >> 4 != 4:
            continue
        header = (ip[0] & 0x0F) * 4
        total = struct.unpack_from(">H", ip, 2)[0]
        tcp = ip[header:]
        if len(tcp) < 13:
            continue
        source, target = struct.unpack_from(">HH", tcp)
        payload = total - header - (tcp[12] >> 4) * 4
        at = seconds * 1e3 + fraction / (1e6 if nano else 1e3)
        out.append((at, source, target, payload))
    return out


def _first_after(stamps: list[float], moments: list[float]) -> float | str:
    """The p50 of the time from each stamp to the first moment after it ("" for none)."""
    moments = sorted(moments)
    gaps = []
    for stamp in stamps:
        at = bisect.bisect_left(moments, stamp)
        if at < len(moments) and moments[at] - stamp < WITHIN_MS:
            gaps.append(moments[at] - stamp)
    return statistics.median(gaps) if gaps else ""


def hop_columns(stamps: list[float], port: int, packets: list[Packet],
                page: tuple[list[float], list[float]]) -> dict[str, float | str]:
    """The hop columns of a scenario whose changes started at ``stamps`` (wall ms); the
    relay listens on ``port``: what leaves it is the relay's, any other picture the
    sender's (the agent's to the server, x11vnc's to websockify). ``page``: what
    :data:`TAKE_ARRIVALS` read, the messages' arrivals and the page's time over each."""
    arrivals, handled = page
    pictures = [p for p in packets if p[3] > SMALL]
    return {
        "sender out ms": _first_after(stamps, [t for t, source, _, _ in pictures
                                               if source != port]) if packets else "",
        "relay out ms": _first_after(stamps, [t for t, source, _, _ in pictures
                                              if source == port]) if packets else "",
        "page has it ms": _first_after(stamps, arrivals),
        "page handler ms": statistics.median(handled) if handled else "",
    }

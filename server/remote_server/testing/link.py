"""A shaped network link for benchmarks: a namespace of our own behind a TUN pair.

The sender (an agent, or x11vnc) runs inside the namespace; the relay (the
server, or websockify) listens in this one on the pair's near address, so
everything between them crosses the pair. A shaper process joins the two TUN
devices and plays ``tc netem``'s part in each direction: a rate (packets are
serialised one after another), a one-way delay of half the round trip, random
loss, and a tail-dropping queue in front of the rate. (These machines' kernel
has no ``netem`` qdisc; a TUN pair does the same from user space, with the
kernel's own TCP at both ends.) Traffic stays inside this machine: the pair's
addresses exist only on the pair. Needs root (``ip netns``, ``/dev/net/tun``).

The queue holds :data:`QUEUE_SECONDS` of the link's rate, like a home router's
buffer; netem's default of a thousand packets would let a sender build a queue
of seconds on a 2 Mbit/s link.

Run alone to check the links: ``python -m remote_server.testing.link``.
"""

from __future__ import annotations

import argparse
import fcntl
import heapq
import os
import random
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from remote_core.testing.processes import stop_process

__all__ = ["LINKS", "QUEUE_SECONDS", "Link", "LinkSpec", "shaped_link"]

QUEUE_SECONDS = 0.2
"""Queue in front of the rate, in seconds of the link's rate."""

_TUNSETIFF = 0x400454CA
_IFF_TUN = 0x0001
_IFF_NO_PI = 0x1000


@dataclass(frozen=True)
class LinkSpec:
    """A link as the issue names it: rate, round trip and loss (each direction alike)."""

    name: str
    mbit: float
    rtt_ms: float
    loss_percent: float = 0.0


LINKS = (
    LinkSpec("10 Mbit/s, 40 ms, 0.5% loss", mbit=10, rtt_ms=40, loss_percent=0.5),
    LinkSpec("2 Mbit/s, 120 ms", mbit=2, rtt_ms=120),
)


@dataclass(frozen=True)
class Link:
    """A live shaped link: run the sender under :attr:`prefix`, listen on :attr:`near`;
    the sender reaches the near side at :attr:`near` and is reached at :attr:`far`."""

    namespace: str
    near: str
    far: str

    @property
    def prefix(self) -> list[str]:
        """The command prefix that runs a program inside the sender's namespace."""
        return ["ip", "netns", "exec", self.namespace]


class Direction:
    """One direction of the link: serialisation at the rate, tail drop, loss, delay."""

    def __init__(self, spec: LinkSpec, rng: random.Random) -> None:
        self.bytes_per_s = spec.mbit * 1e6 / 8
        self.delay = spec.rtt_ms / 2000
        self.loss = spec.loss_percent / 100
        self.rng = rng
        self.free_at = 0.0  # when the last queued packet has left the rate limiter
        self.dropped = 0

    def arrival(self, size: int, now: float) -> float | None:
        """When a packet of ``size`` bytes sent at ``now`` arrives; ``None``: lost."""
        start = max(now, self.free_at)
        if start - now > QUEUE_SECONDS:
            self.dropped += 1
            return None  # the queue is full
        self.free_at = start + size / self.bytes_per_s
        if self.loss and self.rng.random() < self.loss:
            self.dropped += 1
            return None
        return self.free_at + self.delay


def _open_tun(name: str) -> int:
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, _TUNSETIFF, struct.pack("16sH", name.encode(), _IFF_TUN | _IFF_NO_PI))
    return fd


def shape(near_dev: str, far_dev: str, namespace: str, spec: LinkSpec) -> None:
    """The shaper: make both devices, move the far one into ``namespace``, say ``ready``
    on stdout, then forward packets both ways until SIGTERM."""
    near, far = _open_tun(near_dev), _open_tun(far_dev)
    subprocess.run(["ip", "link", "set", far_dev, "netns", namespace], check=True)
    rng = random.Random(1)  # noqa: S311 - packet loss, not secrets
    ways = {near: (far, Direction(spec, rng)), far: (near, Direction(spec, rng))}
    pending: list[tuple[float, int, int, bytes]] = []  # (due, order, fd, packet)
    order = 0
    selector = selectors.DefaultSelector()
    for fd in ways:
        selector.register(fd, selectors.EVENT_READ)
    running = True

    def stop(*_: object) -> None:
        nonlocal running
        running = False

    signal.signal(signal.SIGTERM, stop)
    print("ready", flush=True)
    while running:
        timeout = max(0.0, pending[0][0] - time.monotonic()) if pending else 0.5
        for key, _ in selector.select(timeout):
            source = key.fd
            target, direction = ways[source]
            while True:
                try:
                    packet = os.read(source, 65536)
                except BlockingIOError:
                    break
                due = direction.arrival(len(packet), time.monotonic())
                if due is not None:
                    order += 1
                    heapq.heappush(pending, (due, order, target, packet))
        now = time.monotonic()
        while pending and pending[0][0] <= now:
            _, _, target, packet = heapq.heappop(pending)
            try:
                os.write(target, packet)
            except OSError:
                pass  # the device is going away


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@contextmanager
def shaped_link(spec: LinkSpec, index: int = 0) -> Iterator[Link]:
    """A namespace joined to this one by a TUN pair shaped to ``spec``; gone on exit."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        raise SystemExit("shaped links need root and ip (iproute2)")
    tag = f"rsb{os.getpid() % 10000}x{index}"
    namespace, near_dev, far_dev = tag, f"{tag}a", f"{tag}b"
    near, far = f"10.213.{index}.1", f"10.213.{index}.2"
    _ip("netns", "add", namespace)
    shaper: subprocess.Popen[str] | None = None
    try:
        shaper = subprocess.Popen(
            [sys.executable, "-m", "remote_server.testing.link", "--shape", near_dev, far_dev,
             namespace, str(spec.mbit), str(spec.rtt_ms), str(spec.loss_percent)],
            stdout=subprocess.PIPE, text=True)
        assert shaper.stdout is not None
        if shaper.stdout.readline().strip() != "ready":
            raise RuntimeError("the link shaper did not start")
        _ip("addr", "add", near, "peer", far, "dev", near_dev)
        _ip("link", "set", near_dev, "up")
        _ip("-n", namespace, "addr", "add", far, "peer", near, "dev", far_dev)
        _ip("-n", namespace, "link", "set", far_dev, "up")
        _ip("-n", namespace, "link", "set", "lo", "up")
        yield Link(namespace=namespace, near=near, far=far)
    finally:
        if shaper is not None:
            stop_process(shaper)
        subprocess.run(["ip", "netns", "del", namespace], check=False, capture_output=True)


_CLIENT = """
import socket, sys, time
t = time.perf_counter(); s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
rtt = time.perf_counter() - t; t = time.perf_counter(); s.sendall(bytes(1_000_000))
s.shutdown(socket.SHUT_WR); s.recv(1); print(rtt, time.perf_counter() - t)
"""


def check(link: Link) -> str:
    """What a TCP connection across ``link`` sees: connect time (one round trip) and the
    rate of a 1 MB upload (sender in the namespace, as the agent)."""
    with socket.create_server((link.near, 0)) as server:
        port = server.getsockname()[1]
        client = subprocess.Popen([*link.prefix, sys.executable, "-c", _CLIENT, link.near,
                                   str(port)], stdout=subprocess.PIPE, text=True)
        conn, _ = server.accept()
        with conn:
            while conn.recv(65536):
                pass
            conn.sendall(b"k")
        rtt, seconds = map(float, client.communicate(timeout=60)[0].split())
    return f"connect {rtt * 1000:.0f} ms, 1 MB at {8 / seconds:.2f} Mbit/s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", nargs=6, metavar=("NEAR", "FAR", "NS", "MBIT", "RTT_MS",
                                                     "LOSS_PERCENT"))
    args = parser.parse_args()
    if args.shape:
        near_dev, far_dev, namespace, mbit, rtt, loss = args.shape
        shape(near_dev, far_dev, namespace,
              LinkSpec("", mbit=float(mbit), rtt_ms=float(rtt), loss_percent=float(loss)))
        return
    for index, spec in enumerate(LINKS):
        with shaped_link(spec, index) as link:
            print(f"{spec.name}: {check(link)}")

if __name__ == "__main__":
    main()

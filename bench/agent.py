"""The agent, glass to glass: latency, frame rate, bandwidth and CPU, against x11vnc.

One 1920x1080 Xvfb; a driver thread changes it like a desktop does (typing
into a 200x40 region 30 times a second, scrolling a page 30 times a second,
the whole screen changing 30 times a second, or nothing at all); a viewer on
loopback decodes what arrives. Each change carries a 12-bit marker (four
16x16 blocks of pure colours, robust to lossy codecs), and the latency of a
change is the time from the driver starting it to the viewer having decoded
a frame that shows it. The marker is part of the change's last X request, and
the clock starts before its first: what is measured is the whole change.

Stacks, measured in the same run on the same display with the same driver:

- ``agent/<codec>``: ``remote-agent`` -> ``remote-support serve`` -> the Python
  viewer (``remote_viewer.client``), one row per codec;
- ``x11vnc``: x11vnc (Debian) -> websockify -> the RFB client of
  ``bench/rfb.py`` (Zlib, CopyRect and Raw encodings).

CPU is the process's user+system time over the scenario, in % of one core.

Run: ``uv run python bench/agent.py`` (``BENCH_SECONDS``, default 5, per scenario;
``BENCH_CODECS``, default every available codec).
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from remote_server.testing.processes import AgentProcess, Api, ServerProcess, free_port  # noqa: E402
from remote_viewer.client import open_viewer  # noqa: E402

from bench.report import report  # noqa: E402
from bench.rfb import ENCODING_NAMES, ENCODINGS, RfbClient  # noqa: E402
from remote_core.codecs import usable_codecs  # noqa: E402
from remote_core.plugins import get_plugin_manager  # noqa: E402
from remote_core.protocol import pb  # noqa: E402
from remote_core.settings import PluginSettings  # noqa: E402
from remote_core.testing.codec_contract import LINE_H, Desktop, video_like  # noqa: E402
from remote_core.testing.processes import stop_process  # noqa: E402
from remote_core.testing.xvfb import Painter, scroll_page, xvfb  # noqa: E402
from remote_core.wsclient import ConnectionClosed, HandshakeError, connect  # noqa: E402

WIDTH, HEIGHT = 1920, 1080
RATE = 30
SECONDS = float(os.environ.get("BENCH_SECONDS", "5"))
TYPING = (200, 40)
PAUSE = (1.5, 2.8)
"""In "video paused", the seconds of the run the screen holds a still desktop (a video
closed, one opened again): the automatic codec's calm second passes, the lossless
picture is on its way, and the motion comes back."""
X11VNC_OPTIONS = ["-nopw", "-localhost", "-shared", "-forever", "-quiet", "-noxrecord",
                  "-defer", "0", "-wait", "1"]

# -- the marker ----------------------------------------------------------------------------------
BLOCK = 16
BLOCKS = 4


def _colours(value: int) -> list[int]:
    """Four 0xRRGGBB colours whose channels are 0 or 255: three bits each."""
    out = []
    for b in range(BLOCKS):
        bits = (value >> (3 * b)) & 7
        out.append((0xFF0000 if bits & 4 else 0) | (0xFF00 if bits & 2 else 0)
                   | (0xFF if bits & 1 else 0))
    return out


def read_marker(image: Any, x: int, y: int) -> int:
    value = 0
    for b in range(BLOCKS):
        blue, green, red = image[y + BLOCK // 2, x + b * BLOCK + BLOCK // 2, :3]
        bits = (4 if red > 127 else 0) | (2 if green > 127 else 0) | (1 if blue > 127 else 0)
        value |= bits << (3 * b)
    return value


# -- the driver ------------------------------------------------------------------------------------
REFRESH = 1 / 60
"""A display refresh, the step of a browser's animation frames."""
EVEN_STEP = (5 ** 0.5 - 1) / 2
"""What each change's fraction of a refresh late adds to the last one's (modulo 1): the
golden ratio's part, which spreads any run of changes about evenly over a refresh's
phases. Random fractions bunch by chance: the wait for the next animation frame, most
of a typed word's glass-to-glass time in a browser, then moved a 20 s run's median by
about 0.3 ms (3 %) either way, more than the stacks differ."""


class Driver(threading.Thread):
    """Changes the display ``RATE`` times a second for ``seconds`` (default ``SECONDS``);
    records marker times."""

    def __init__(self, painter: Painter, scenario: str, desktop: Desktop,
                 movie: list[Any], start_marker: int, seconds: float = SECONDS) -> None:
        super().__init__(daemon=True)
        self.painter, self.scenario, self.desktop, self.movie = painter, scenario, desktop, movie
        self.seconds = seconds
        self.drawn: dict[int, int] = {}
        self.marker = start_marker
        self.resumed: int | None = None
        """"video paused": the marker of the first change after the pause."""
        self.marker_xy = marker_position(scenario, desktop)

    def run(self) -> None:
        steps = int(self.seconds * RATE)
        # Each change a fraction of a display refresh late: a browser shows a change at
        # its next animation frame, and changes at an exact 30 a second would meet those
        # frames at one phase, so a run's latency would say more about where that phase
        # fell than about the stack (as a person types, they fall anywhere). The
        # fractions spread evenly (:data:`EVEN_STEP`), from a start of the run's own.
        first = random.Random(self.marker).random()
        start = time.perf_counter()
        for step in range(steps):
            late = (first + step * EVEN_STEP) % 1.0
            target = start + step / RATE + late * REFRESH
            delay = target - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            if self.scenario != "idle":
                self._change(step)
        time.sleep(max(0.0, start + steps / RATE - time.perf_counter()))

    def _change(self, step: int) -> None:
        """One change, drawn as a desktop would, its marker inside the last request. Its
        time is taken as the first request goes to the X server: what the desktop's model
        works out before (1.3 ms of numpy for a scrolled page) is not the screen's."""
        p, d = self.painter, self.desktop
        paused = self.scenario == "video paused" and PAUSE[0] <= step / RATE < PAUSE[1]
        if paused and step != round(PAUSE[0] * RATE):
            return  # the still desktop, drawn at the pause's first step
        self.marker = self.marker % 4095 + 1
        mx, my = self.marker_xy
        if self.scenario == "typing":  # one PutImage of the 200x40 region
            x0, y0 = d.type(3, TYPING)
            region = d.image[y0:y0 + TYPING[1], x0:x0 + TYPING[0]].copy()
            stamp(region, self.marker, mx - x0, my - y0)
            pixels = region.tobytes()
            self._drawing()
            p.put_bgra(x0, y0, TYPING[0], TYPING[1], pixels)
        elif self.scenario == "scrolling":  # CopyArea up one line, PutImage the new line
            x0 = d.page[0]

            def mark(line: Any, top: int) -> None:
                stamp(line, self.marker, mx - x0, my - top)
                self._drawing()

            scroll_page(p, d, mark)
        elif self.scenario in ("full screen", "video paused"):
            if paused:  # PutImage of the desktop
                pixels = d.image.tobytes()
                self._drawing()
                p.put_bgra(0, 0, WIDTH, HEIGHT, pixels)
            else:  # CopyArea of a whole new picture
                self._drawing()
                p.blit(self.movie[step % len(self.movie)], 0, 0, WIDTH, HEIGHT)
                if (self.scenario == "video paused" and self.resumed is None
                        and step / RATE >= PAUSE[1]):
                    self.resumed = self.marker
            for b, colour in enumerate(_colours(self.marker)):
                p.fill(mx + b * BLOCK, my, BLOCK, BLOCK, colour)
        p.sync()

    def _drawing(self) -> None:
        """The current marker's change goes to the X server now."""
        self.drawn[self.marker] = time.perf_counter_ns()


def stamp(image: Any, value: int, x: int, y: int) -> None:
    """Draw the marker into a BGRA array at ``(x, y)``."""
    for b, colour in enumerate(_colours(value)):
        image[y:y + BLOCK, x + b * BLOCK:x + (b + 1) * BLOCK] = (
            colour & 0xFF, (colour >> 8) & 0xFF, colour >> 16, 255)


def marker_position(scenario: str, desktop: Desktop) -> tuple[int, int]:
    x0, y0, _, _ = desktop.page
    if scenario == "typing":  # inside the 200x40 region, at its right end
        return x0 + TYPING[0] - BLOCKS * BLOCK, y0 + TYPING[1] - BLOCK
    if scenario == "scrolling":  # in the page's newly drawn bottom line
        return x0 + 400, y0 + desktop._lines * LINE_H - BLOCK
    return 8, 8


# -- measuring ------------------------------------------------------------------------------------
def cpu_seconds(pid: int) -> float:
    """User+system seconds of ``pid`` and its live children (websockify forks per client)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    total = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        total += sum(cpu_seconds(int(child)) for child in task.read_text().split())
    return total


class Receiver:
    """What a stack's viewer reports: the marker in each decoded frame with its decode time
    (read the moment it was decoded), and the bytes received so far."""

    marker_xy: tuple[int, int] = (0, 0)
    next_marker: Callable[[], Awaitable[tuple[int, int]]]
    bytes_received: Callable[[], int]


async def measure(stack: str, scenario: str, receiver: Receiver, painter: Painter,
                  desktop: Desktop, movie: list[Any], pids: dict[str, int],
                  marker: int) -> tuple[dict[str, Any], int]:
    driver = Driver(painter, scenario, desktop, movie, marker)
    cpu0 = {name: cpu_seconds(pid) for name, pid in pids.items()}
    bytes0 = receiver.bytes_received()
    latencies: list[float] = []
    frames = 0
    seen = 0
    receiver.marker_xy = driver.marker_xy
    started = time.perf_counter()
    driver.start()
    with anyio.move_on_after(SECONDS + 0.5):
        while True:
            value, decoded_ns = await receiver.next_marker()
            frames += 1
            drawn = driver.drawn.get(value)
            if drawn is not None and value != seen:
                seen = value
                latencies.append((decoded_ns - drawn) / 1e6)
    elapsed = time.perf_counter() - started
    driver.join()
    cpu = {name: 100 * (cpu_seconds(pid) - cpu0[name]) / elapsed for name, pid in pids.items()}
    # frames and bytes of SECONDS of changes (late ones included), per second of changes
    mbit = (receiver.bytes_received() - bytes0) * 8 / SECONDS / 1e6
    row: dict[str, Any] = {
        "stack": stack, "scenario": scenario,
        "p50 ms": statistics.median(latencies) if latencies else "",
        "p99 ms": float(np.percentile(latencies, 99)) if latencies else "",
        "changes shown": f"{len(latencies)}/{len(driver.drawn)}" if driver.drawn else "",
        "fps": frames / SECONDS, "Mbit/s": mbit,
        "sender CPU %": cpu["sender"],
        "relay CPU %": cpu.get("relay", 0.0),
    }
    return row, driver.marker


# -- the stacks -----------------------------------------------------------------------------------
SCENARIOS = ("typing", "scrolling", "full screen", "idle")


async def agent_rows(server: ServerProcess, api: Api, agent: AgentProcess, session_id: str,
                     codec: Any, painter: Painter, desktop: Desktop, movie: list[Any],
                     marker: int) -> tuple[list[dict[str, Any]], int]:
    rows = []
    quality = pb.QualitySettings(preset=pb.QUALITY_BALANCED)
    async with open_viewer(server.url, api.viewer_token(session_id),
                           codec=codec.preference, quality=quality) as viewer:
        with anyio.fail_after(20):  # the first frames may precede the codec choice
            frame = await viewer.next_frame()
            while frame.codec != codec.wire_name:
                frame = await viewer.next_frame(after=frame.sequence)
        last = frame.sequence
        receiver = Receiver()

        async def next_marker() -> tuple[int, int]:
            nonlocal last
            got = await viewer.next_frame(60, after=last)
            last = got.sequence
            return read_marker(got.image, *receiver.marker_xy), got.decoded_ns

        receiver.next_marker = next_marker
        receiver.bytes_received = lambda: viewer.bytes_received
        pids = {"sender": agent.process.pid, "relay": server.process.pid}  # type: ignore[union-attr]
        for scenario in SCENARIOS:
            row, marker = await measure(f"agent/{codec.name}", scenario, receiver, painter,
                                        desktop, movie, pids, marker)
            rows.append(row)
    return rows, marker


def start_vnc(display: str) -> tuple[subprocess.Popen[bytes], subprocess.Popen[bytes], int]:
    """x11vnc on ``display`` and websockify in front of it; returns both and the ws port."""
    vnc_port, ws_port = free_port(), free_port()
    vnc = subprocess.Popen(["x11vnc", "-display", display, "-rfbport", str(vnc_port),
                            *X11VNC_OPTIONS], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    proxy = subprocess.Popen(["websockify", f"127.0.0.1:{ws_port}", f"127.0.0.1:{vnc_port}"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return vnc, proxy, ws_port


async def _rfb_connect(ws_port: int) -> RfbClient:
    with anyio.fail_after(20):
        while True:
            try:
                client = RfbClient(await connect(f"ws://127.0.0.1:{ws_port}/"))
                await client.handshake()
                return client
            except (OSError, ValueError, ConnectionClosed, HandshakeError):
                await anyio.sleep(0.2)


async def vnc_rows(ws_port: int, pids: dict[str, int], painter: Painter, desktop: Desktop,
                   movie: list[Any], marker: int) -> tuple[list[dict[str, Any]], int]:
    """The RFB client reads in its own task (a cancelled read would lose the stream's place)."""
    rows = []
    client = await _rfb_connect(ws_port)
    receiver = Receiver()
    send, markers = anyio.create_memory_object_stream[tuple[int, int]](10_000)

    async def read() -> None:
        while True:
            decoded = await client.update()
            send.send_nowait((read_marker(client.image, *receiver.marker_xy), decoded))
            await client.request()

    async def next_marker() -> tuple[int, int]:
        return await markers.receive()

    receiver.next_marker = next_marker
    receiver.bytes_received = lambda: client.bytes_received
    async with anyio.create_task_group() as group:
        group.start_soon(read)
        await markers.receive()  # the first, whole frame buffer
        await anyio.sleep(1.0)
        for scenario in SCENARIOS:
            while True:  # what arrived between scenarios belongs to neither
                try:
                    markers.receive_nowait()
                except anyio.WouldBlock:
                    break
            row, marker = await measure("x11vnc", scenario, receiver, painter, desktop, movie,
                                        pids, marker)
            rows.append(row)
        group.cancel_scope.cancel()
    await client.close()
    return rows, marker


async def idle_without_viewer(agent: AgentProcess) -> dict[str, Any]:
    cpu0 = cpu_seconds(agent.process.pid)
    started = time.perf_counter()
    await anyio.sleep(SECONDS)
    cpu = 100 * (cpu_seconds(agent.process.pid) - cpu0) / (time.perf_counter() - started)
    return {"stack": "agent", "scenario": "idle, no viewer", "p50 ms": "", "p99 ms": "",
            "changes shown": "", "fps": 0.0, "Mbit/s": 0.0, "sender CPU %": cpu,
            "relay CPU %": ""}


def main() -> None:
    for tool in ("Xvfb", "x11vnc", "websockify"):
        if shutil.which(tool) is None:
            raise SystemExit(f"bench/agent.py needs {tool} (scripts/bootstrap installs it)")
    plugins = get_plugin_manager(PluginSettings())
    wanted = os.environ.get("BENCH_CODECS")
    codecs = [c for c in usable_codecs(plugins.codecs(), encode=True, decode=True)
              if wanted is None or c.name in wanted.split(",")]
    work = Path(tempfile.mkdtemp(prefix="bench-agent-"))
    with xvfb(WIDTH, HEIGHT, set_display=False) as screen:
        painter = Painter(screen.display)
        desktop = Desktop(WIDTH, HEIGHT, seed=1)
        painter.put_bgra(0, 0, WIDTH, HEIGHT, desktop.image.tobytes())
        movie = [painter.upload(video_like(WIDTH, HEIGHT, t)) for t in range(8)]
        painter.sync()
        server = ServerProcess(work / "server", log_level="warning").start()
        api = Api(server)
        agent_id, key = api.machine_with_key()
        agent = AgentProcess(work / "agent", screen.display, "--server", server.url,
                             "--key", key, "--log-level", "warning")
        rows: list[dict[str, Any]] = []
        marker = 0
        try:
            session = api.live_session(agent_id)
            time.sleep(1.0)
            rows.append(anyio.run(idle_without_viewer, agent))
            for codec in codecs:
                painter.put_bgra(0, 0, WIDTH, HEIGHT, desktop.image.tobytes())
                more, marker = anyio.run(agent_rows, server, api, agent, session["id"], codec,
                                         painter, desktop, movie, marker)
                rows.extend(more)
            painter.put_bgra(0, 0, WIDTH, HEIGHT, desktop.image.tobytes())
            vnc, proxy, ws_port = start_vnc(screen.display)
            try:
                more, marker = anyio.run(vnc_rows, ws_port, {"sender": vnc.pid,
                                                             "relay": proxy.pid},
                                         painter, desktop, movie, marker)
            finally:
                for process in (proxy, vnc):
                    stop_process(process)
            rows.extend(more)
        finally:
            agent.stop()
            api.close()
            server.stop()
            painter.close()
    encodings = ", ".join(ENCODING_NAMES[e] for e in ENCODINGS)
    report("agent", rows, title=f"Agent glass to glass at {WIDTH}x{HEIGHT}, {RATE} changes/s, "
           f"{SECONDS:g} s per scenario", notes=[
               f"x11vnc {' '.join(X11VNC_OPTIONS)} via websockify; RFB client encodings: "
               f"{encodings} (in preference order).",
               "sender = remote-agent or x11vnc; relay = remote-support serve or websockify.",
               "changes shown: changes whose marker a decoded frame showed / changes drawn.",
           ])


if __name__ == "__main__":
    main()

"""Glass to glass in the real browser: the console's viewer against noVNC.

What a technician feels is the time from a change on the remote screen to the
pixels in their browser tab. One 1920x1080 Xvfb and the change driver of
``bench/agent.py`` (typing into a 200x40 region, scrolling a page, the whole
screen changing, each 30 times a second, and idle; every change carries a
12-bit marker); headless Chromium (``/usr/bin/chromium``) shows each stack,
and a ``requestAnimationFrame`` loop injected with Playwright's ``evaluate``
(a DevTools injection, so the console's CSP stays as shipped) reads the marker
off the page's canvas on every frame the page paints. The latency of a change
is the time from the driver starting it to the first painted frame showing
its marker (both clocks are this machine's wall clock).

Stacks, in the same run on the same display with the same driver:

- ``console/<codec>``: ``remote-agent`` -> ``remote-support serve`` -> the
  console's viewer (``/console/viewer.html``), once per codec the page offers
  (the viewer asks WebCodecs) and once as it starts (``console/default``:
  codec and quality Auto);
- ``noVNC/<variant>``: x11vnc (Debian) -> websockify -> noVNC's
  ``vnc_lite.html`` (Debian's ``novnc``), x11vnc with its default flags and
  tuned (``-defer 0 -wait 1 -xd_area 0``).

Links: loopback, and each of :data:`remote_server.testing.link.LINKS` (10 Mbit/s with 40 ms
round trip and 0.5% loss; 2 Mbit/s with 120 ms), shaped like ``tc netem`` on a
TUN pair into a namespace of the benchmark's own (:mod:`remote_server.testing.link`): the
sender (agent or x11vnc) runs inside it, the relay (server or websockify)
across the link, the browser beside the relay on loopback (a secure context,
which WebCodecs needs). Needs root for the shaped links (``BENCH_LINKS=0``:
loopback only).

The agent also loads ``codec_av1`` (not a default plugin), so the console's
AV1 is measured beside VP9 and H.264.

Columns: p50/p99 latency, changes shown / drawn, fps (frames painted with a
new marker per second), the longest time without a newly painted change while
changes were being made (stall ms), the longest time the marker's row of pixels did not
change at all meanwhile (frozen ms: a moving picture too blurred for its markers to be
read is not frozen), Mbit/s the relay sent towards the browser
(the kernel's count for the relay's port), and the
CPU (% of one core) of the sender (agent or x11vnc), the relay (server or
websockify) and the browser's renderer and GPU processes.

Run: ``uv run python -m bench.browser`` (``BENCH_SECONDS``, default 5, per
scenario; ``BENCH_CODECS=raw,h264`` to measure only those; ``BENCH_LINKS=0,2``
for loopback and the second shaped link only; ``BENCH_SCENARIOS="full screen"``
for one scenario; ``BENCH_STACKS=console`` (or ``novnc``) for one stack;
``BENCH_VNC=tuned`` (or ``default``) for one x11vnc variant; ``BENCH_ROUNDS=8`` for
each link's stacks measured eight times in turns, with a third table of the ratios'
geometric means over the rounds and their 95 % intervals (:func:`over_rounds`);
``BENCH_CHANGES=DIR`` for each scenario's changes (seconds into the run, latency) in a
JSON file there;
``BENCH_WITHOUT=avc1`` for a console page told its browser decodes no H.264 (a Chromium
built without it: motion goes in VP9);
``BENCH_LOG_LEVEL=info`` for the server's and the agent's logs, kept in the run's
temporary directory; ``BENCH_BUSY=2`` for two processes spinning on the CPU beside the
stacks (a machine short of CPU); ``BENCH_WALLPAPER_NOISE=6`` for a wallpaper that
compresses like a photograph; ``BENCH_HOPS=1`` for where the time goes, :mod:`bench.hops`:
the p50 ms from a change to the sender's packet out and the relay's (on loopback,
with ``tcpdump`` as root) and to the page's socket having it, and the p50 ms the page's
``onmessage`` took over a picture).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from remote_server.testing.link import LINKS, QUEUE_SECONDS, Link, LinkSpec, shaped_link
from remote_server.testing.processes import (
    ADMIN_PASSWORD,
    AgentProcess,
    Api,
    ServerProcess,
    free_port,
)

from bench.agent import (
    BLOCK,
    BLOCKS,
    HEIGHT,
    RATE,
    SCENARIOS,
    SECONDS,
    WIDTH,
    Driver,
    cpu_seconds,
)
from bench.hops import PAGE_SCRIPT, TAKE_ARRIVALS, Packets, hop_columns
from bench.report import report
from remote_core.testing.browser import chromium, log_in, wait_until, watched_context
from remote_core.testing.codec_contract import Desktop, video_like
from remote_core.testing.processes import stop_process
from remote_core.testing.xvfb import Painter, xvfb

NOVNC = Path("/usr/share/novnc")
X11VNC_BASE = ["-nopw", "-shared", "-forever", "-quiet"]
X11VNC_VARIANTS = {"default": [], "tuned": ["-defer", "0", "-wait", "1", "-xd_area", "0"]}
VIEWPORT = {"width": WIDTH, "height": HEIGHT + 120}
LOG_LEVEL = os.environ.get("BENCH_LOG_LEVEL", "warning")  # of the server and the agent
HOPS = os.environ.get("BENCH_HOPS") == "1"
"""Also when the sender's, the relay's and the page's hold of each change came, and the
page's time over each message (:mod:`bench.hops`)."""
CHANGES = os.environ.get("BENCH_CHANGES")
"""A directory to write each scenario's shown changes to, one JSON file a scenario:
``[seconds into the run, latency ms]`` pairs (where a p99 comes from)."""
BUSY = int(os.environ.get("BENCH_BUSY", "0"))
"""Processes that spin on the CPU beside the stacks throughout: a machine short of CPU."""
WALLPAPER_NOISE = float(os.environ.get("BENCH_WALLPAPER_NOISE", "0"))
"""Noise of this standard deviation on the desktop's wallpaper: a desktop that compresses
like a photograph (``Desktop``'s ``wallpaper_noise``)."""
WITHOUT_WEBCODECS = tuple(filter(None, os.environ.get("BENCH_WITHOUT", "").split(",")))
"""WebCodecs codec strings' prefixes (``avc1``, ``vp09`` ...) the console's page is told this
browser does not decode: ``BENCH_WITHOUT=avc1`` is a Chromium built without H.264, whose
motion goes in VP9."""

_WITHOUT_SCRIPT = """(prefixes) => {
  if (!("VideoDecoder" in self)) return;  // not a secure context
  const supported = VideoDecoder.isConfigSupported.bind(VideoDecoder);
  VideoDecoder.isConfigSupported = (config) =>
    prefixes.some((prefix) => config.codec.startsWith(prefix))
      ? Promise.resolve({ supported: false, config }) : supported(config);
}"""


@contextmanager
def busy_loops(count: int) -> Iterator[None]:
    """``count`` processes spinning on the CPU for the duration of the block."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
             for _ in range(count)]
    try:
        yield
    finally:
        for loop in loops:
            stop_process(loop, 5.0)


def _wanted(variable: str, every: tuple[str, ...]) -> tuple[str, ...]:
    """Those of ``every`` that the comma-separated ``variable`` names (all when unset)."""
    names = os.environ.get(variable)
    if names is None:
        return every
    chosen = tuple(name for name in every if name in names.split(","))
    if not chosen:
        raise SystemExit(f"{variable}={names!r} names none of {', '.join(every)}")
    return chosen


BROWSER_SCENARIOS = (*SCENARIOS[:-1], "video paused", SCENARIOS[-1])
"""The Python viewer's scenarios, and a video paused on a desktop (``bench.agent.PAUSE``): over a
slow link the lossless picture restored in the pause is still on its way when the motion
comes back (resume ms)."""
RUN_SCENARIOS = _wanted("BENCH_SCENARIOS", BROWSER_SCENARIOS)
STACKS = _wanted("BENCH_STACKS", ("console", "novnc"))
VNC_VARIANTS = _wanted("BENCH_VNC", tuple(X11VNC_VARIANTS))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "1"))
"""Times each link's stacks are measured, in turns: the stack that went first in one round
goes second in the next, so a drift of the machine's speed during a run weighs on both."""

# Reads the marker at (x, y) of the canvas on every painted frame; keeps each new value
# with its wall-clock time in ms, and the time of every frame whose marker row changed at
# all (a picture too blurred to read a marker in still moves). The context is the page's
# own (getContext returns it).
_WATCH = """([selector, x, y, block, blocks]) => {
  const canvas = document.querySelector(selector);
  const ctx = canvas.getContext("2d");
  const watch = { x, y, last: -1, seen: [], row: null, changed: [] };
  window.__benchWatch = watch;
  const read = () => {
    const row = ctx.getImageData(watch.x, watch.y + block / 2, blocks * block, 1).data;
    if (watch.row === null || row.some((byte, i) => byte !== watch.row[i])) {
      watch.row = row;
      watch.changed.push(performance.timeOrigin + performance.now());
    }
    let value = 0;
    for (let b = 0; b < blocks; b++) {
      const o = (b * block + block / 2) * 4;
      value |= ((row[o] > 127 ? 4 : 0) | (row[o + 1] > 127 ? 2 : 0)
                | (row[o + 2] > 127 ? 1 : 0)) << (3 * b);
    }
    if (value !== watch.last) {
      watch.last = value;
      watch.seen.push([value, performance.timeOrigin + performance.now()]);
    }
    requestAnimationFrame(read);
  };
  requestAnimationFrame(read);
}"""


_CODEC_COUNT = "(codec) => window.remoteViewer.codecFrames[codec] || 0"
_CODEC_COUNTS = ("() => ({...window.remoteViewer.codecFrames, "
                 "scaled: window.remoteViewer.scaled, repeated: window.remoteViewer.repeats})")
_NOTICE = "() => document.getElementById('notice')?.textContent || ''"
_CODEC_FRAMES = "([codec, over]) => (window.remoteViewer.codecFrames[codec] || 0) > over"
_NOVNC_SHOWS_SCREEN = "(width) => document.querySelector('#screen canvas').width === width"


def sent_bytes(port: int) -> dict[str, int]:
    """Bytes sent so far on each established TCP connection from local ``port`` (the
    relay's listening port: what it sent towards the browser), by peer, as the kernel
    counts them (``ss``)."""
    out = subprocess.run(["ss", "-tinH", "state", "established", f"( sport = :{port} )"],
                         capture_output=True, text=True, check=True).stdout
    return {peer: int(sent) for peer, sent in re.findall(r"(\S+:\d+)\s*\n.*?bytes_sent:(\d+)", out)}


def sent_since(before: dict[str, int], port: int) -> int:
    """Bytes sent since ``before`` on the connections there are now (one that closed in
    between takes its count along: short page requests, not the viewer's socket)."""
    return sum(now - before.get(peer, 0) for peer, now in sent_bytes(port).items())


def browser_pids() -> list[int]:
    """This process's Chromium renderer and GPU processes (decoding, painting, compositing).

    Chromium rewrites its command line into one string, hence the search in all of it."""
    parents: dict[int, int] = {}
    kinds: dict[int, bytes] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            pid = int(stat.parent.name)
            parents[pid] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            kinds[pid] = (stat.parent / "cmdline").read_bytes()
        except (OSError, ValueError):
            continue
    mine = os.getpid()

    def descends(pid: int) -> bool:
        while pid > 1:
            pid = parents.get(pid, 0)
            if pid == mine:
                return True
        return False
    return [pid for pid, cmdline in kinds.items()
            if (b"--type=renderer" in cmdline or b"--type=gpu-process" in cmdline)
            and descends(pid)]


class Page:
    """One browser page showing a stack, with the marker watch injected."""

    def __init__(self, page: Any, canvas: str) -> None:
        self.page = page
        page.evaluate(_WATCH, [canvas, 0, 0, BLOCK, BLOCKS])

    def aim(self, xy: tuple[int, int]) -> None:
        self.page.evaluate("([x, y]) => { Object.assign(window.__benchWatch, {x, y}); }",
                           list(xy))

    def take(self) -> list[tuple[int, float]]:
        """The (marker, wall ms) pairs painted since the last take."""
        return [tuple(pair) for pair in self.page.evaluate(
            "() => window.__benchWatch.seen.splice(0)")]

    def take_changes(self) -> list[float]:
        """The wall ms of each painted frame whose marker row changed since the last take."""
        return list(self.page.evaluate("() => window.__benchWatch.changed.splice(0)"))


def keep_changes(name: str, drawn: dict[int, int], shown: list[int],
                 latencies: list[float]) -> None:
    """Write the changes ``shown`` (markers) and their latencies to :data:`CHANGES`."""
    assert CHANGES is not None
    start = min(drawn.values(), default=0)
    pairs = [((drawn[marker] - start) / 1e9, latency)
             for marker, latency in zip(shown, latencies, strict=True)]
    folder = Path(CHANGES)
    folder.mkdir(parents=True, exist_ok=True)
    slug = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")
    (folder / f"{slug}-{time.strftime('%H%M%S')}.json").write_text(json.dumps(pairs))


def longest_stall(start_ms: float, end_ms: float, painted_ms: list[float]) -> float:
    """The longest time from ``start_ms`` on without a newly painted change, up to the
    last painted one or ``end_ms``, whichever is later."""
    times = sorted(t for t in painted_ms if t >= start_ms)
    edges = [start_ms, *times, max([end_ms, *times[-1:]])]
    return max(b - a for a, b in itertools.pairwise(edges))


def measure(stack: str, scenario: str, view: Page, painter: Painter, desktop: Desktop,
            movie: list[Any], pids: dict[str, int], port: int,
            marker: int, link: str) -> tuple[dict[str, Any], int]:
    reset(painter, desktop)  # every scenario starts from the settled desktop
    driver = Driver(painter, scenario, desktop, movie, marker)
    view.aim(driver.marker_xy)
    time.sleep(0.3)
    view.take()
    view.take_changes()
    if HOPS:
        view.page.evaluate(TAKE_ARRIVALS)
    # The capture (BENCH_HOPS) starts and ends outside the times and counts taken.
    with Packets() if HOPS and link == "loopback" else contextlib.nullcontext() as packets:
        browser = browser_pids()
        cpu0 = {name: cpu_seconds(pid) for name, pid in pids.items()}
        browser0 = sum(cpu_seconds(pid) for pid in browser)
        sent0 = sent_bytes(port)
        # Wall clock of the driver's perf_counter_ns stamps, as the page's clock is wall time.
        wall_offset_ms = time.time_ns() / 1e6 - time.perf_counter_ns() / 1e6
        started = time.perf_counter()
        driver.start()
        driver.join()
        time.sleep(0.5)  # the last changes' way to the page
        elapsed = time.perf_counter() - started
        cpu = {name: 100 * (cpu_seconds(pid) - cpu0[name]) / elapsed
               for name, pid in pids.items()}
        browser_cpu = 100 * (sum(cpu_seconds(pid) for pid in browser) - browser0) / elapsed
        mbit = sent_since(sent0, port) * 8 / SECONDS / 1e6
    painted = view.take()
    changes = view.take_changes()
    latencies = []
    shown: list[int] = []
    shown_at: list[float] = []
    newest = 0  # when the newest change shown so far was drawn
    for value, painted_ms in painted:
        drawn = driver.drawn.get(value)
        if drawn is None or value in shown:
            continue
        # A blurred picture can read as any marker: one read before it was drawn, or after
        # a newer one was shown (a page draws changes in order), was not shown.
        latency = painted_ms - (drawn / 1e6 + wall_offset_ms)
        if latency < 0 or drawn < newest:
            continue
        newest = drawn
        shown.append(value)
        shown_at.append(painted_ms)
        latencies.append(latency)
    if CHANGES:
        keep_changes(f"{link} {stack} {scenario}", driver.drawn, shown, latencies)
    stall: float | str = ""
    frozen: float | str = ""
    if driver.drawn:
        first, last = (min(driver.drawn.values()) / 1e6 + wall_offset_ms,
                       max(driver.drawn.values()) / 1e6 + wall_offset_ms)
        stall = longest_stall(first, last, shown_at)
        # Meanwhile: a later sharper picture of the last change is no end of a freeze.
        end = max([last, *shown_at])
        frozen = longest_stall(first, last, [t for t in changes if t <= end])
    resume: float | str = ""
    if driver.resumed is not None:  # from the motion's return to its first marker shown
        back = driver.drawn[driver.resumed]
        after = [at for value, at in zip(shown, shown_at, strict=True)
                 if driver.drawn[value] >= back]
        if after:
            resume = min(after) - (back / 1e6 + wall_offset_ms)
    row: dict[str, Any] = {
        "link": link, "stack": stack, "scenario": scenario,
        "p50 ms": statistics.median(latencies) if latencies else "",
        "p99 ms": float(np.percentile(latencies, 99)) if latencies else "",
        "changes shown": f"{len(shown)}/{len(driver.drawn)}" if driver.drawn else "",
        "fps": len([1 for value, _ in painted if value in driver.drawn]) / SECONDS,
        "stall ms": stall,
        "frozen ms": frozen,
        "resume ms": resume,
        "Mbit/s": mbit,
        "sender CPU %": cpu["sender"], "relay CPU %": cpu["relay"],
        "browser CPU %": browser_cpu,
    }
    if HOPS:
        stamps = [drawn / 1e6 + wall_offset_ms for drawn in driver.drawn.values()]
        row |= hop_columns(stamps, port, packets.packets if packets else [],
                           view.page.evaluate(TAKE_ARRIVALS))
    return row, driver.marker


SETTLE = 1.5
"""Seconds a stack is left alone after the desktop is drawn back: longer than the automatic
codec's calm second, so a scenario starts from the settled picture, not the switch back
from the last one's motion."""


def reset(painter: Painter, desktop: Desktop) -> None:
    painter.put_bgra(0, 0, WIDTH, HEIGHT, desktop.image.tobytes())
    painter.sync()
    time.sleep(SETTLE)


def console_rows(browser: Any, server: ServerProcess, agent: AgentProcess, session_id: str,
                 painter: Painter, desktop: Desktop, movie: list[Any],
                 marker: int, link: str) -> tuple[list[dict[str, Any]], int]:
    rows = []
    pids = {"sender": agent.process.pid, "relay": server.process.pid}  # type: ignore[union-attr]
    with watched_context(browser, viewport=VIEWPORT) as context:
        if HOPS:
            context.add_init_script(PAGE_SCRIPT)
        if WITHOUT_WEBCODECS:
            context.add_init_script(
                f"({_WITHOUT_SCRIPT})({json.dumps(list(WITHOUT_WEBCODECS))})")
        page = context.new_page()
        log_in(page, server.url, "admin", ADMIN_PASSWORD)
        page.goto(f"{server.url}/console/viewer.html?session={session_id}")
        page.wait_for_selector("#state[data-state=connected]", timeout=30_000)
        wait_until(lambda: page.evaluate("window.remoteViewer.drawn") > 0, what="a picture")
        names: list[str] = page.evaluate("window.remoteViewer.codecs.names")
        wanted = os.environ.get("BENCH_CODECS")
        choices = [""] + [n for n in names if wanted is None or n in wanted.split(",")]
        view = Page(page, "#screen")
        for choice in choices:
            page.select_option("#codec", choice)
            reset(painter, desktop)
            if choice:
                counted = page.evaluate(_CODEC_COUNT, choice)
                painter.put_bgra(0, 0, WIDTH, HEIGHT, movie_frame(desktop))
                painter.sync()
                wait_until(functools.partial(page.evaluate, _CODEC_FRAMES, [choice, counted]),
                           what=f"{choice} frames", timeout=20)
                reset(painter, desktop)
            for scenario in RUN_SCENARIOS:
                before = page.evaluate(_CODEC_COUNTS)
                row, marker = measure(f"console/{choice or 'default'}", scenario, view,
                                      painter, desktop, movie, pids, server.port, marker, link)
                after = page.evaluate(_CODEC_COUNTS)
                # "scaled": pictures drawn larger than coded (the agent was short of CPU);
                # "repeated": keyframes of the picture shown, skipped
                row["frames by codec"] = " ".join(
                    f"{name} {after[name] - before.get(name, 0)}" for name in sorted(after)
                    if after[name] > before.get(name, 0))
                notice = page.evaluate(_NOTICE)
                if notice:
                    print(f"  {link} console/{choice or 'default'} {scenario}: the page "
                          f"says {notice!r}", flush=True)
                rows.append(row)
            reset(painter, desktop)
    return rows, marker


def movie_frame(desktop: Desktop) -> bytes:
    """A whole screen unlike the desktop, so a codec switch shows in a frame at once."""
    return (255 - desktop.image).tobytes()


@contextmanager
def novnc(display: str, flags: list[str],
          link: Link | None) -> Iterator[tuple[int, dict[str, int]]]:
    """x11vnc on ``display`` behind websockify serving noVNC; the web port and the pids.

    Over a shaped ``link``, x11vnc runs in its namespace and websockify reaches it
    across the link."""
    vnc_port, web_port = free_port(), free_port()
    where = ["-listen", link.far] if link else ["-localhost"]
    vnc = subprocess.Popen([*(link.prefix if link else []), "x11vnc", "-display", display,
                            "-rfbport", str(vnc_port), *where, *X11VNC_BASE, *flags],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proxy = subprocess.Popen(["websockify", "--web", str(NOVNC), f"127.0.0.1:{web_port}",
                              f"{link.far if link else '127.0.0.1'}:{vnc_port}"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield web_port, {"sender": vnc.pid, "relay": proxy.pid}
    finally:
        for process in (proxy, vnc):
            stop_process(process)


def novnc_rows(browser: Any, display: str, painter: Painter, desktop: Desktop,
               movie: list[Any], marker: int,
               link: Link | None, label: str) -> tuple[list[dict[str, Any]], int]:
    rows = []
    for variant in VNC_VARIANTS:
        flags = X11VNC_VARIANTS[variant]
        reset(painter, desktop)
        # vnc_lite.html asks for a favicon websockify does not have: noVNC's page, not ours.
        with novnc(display, flags, link) as (port, pids), \
                watched_context(browser, viewport=VIEWPORT, allow=("favicon.ico",)) as context:
            if HOPS:
                context.add_init_script(PAGE_SCRIPT)
            page = context.new_page()
            url = (f"http://127.0.0.1:{port}/vnc_lite.html?host=127.0.0.1&port={port}"
                   "&path=websockify")
            deadline = time.monotonic() + 20
            while True:  # websockify takes a moment to listen
                try:
                    page.goto(url)
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.3)
            page.wait_for_selector("#screen canvas", timeout=20_000)
            wait_until(functools.partial(page.evaluate, _NOVNC_SHOWS_SCREEN, WIDTH),
                       what="noVNC's picture", timeout=20)
            time.sleep(1.0)
            view = Page(page, "#screen canvas")
            for scenario in RUN_SCENARIOS:
                row, marker = measure(f"noVNC/{variant}", scenario, view, painter, desktop,
                                      movie, pids, port, marker, label)
                rows.append(row)
    return rows, marker


def ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each console row's p50 and p99 over the best noVNC variant's in the same scenario,
    link and round."""
    out = []
    for link, round_ in dict.fromkeys((r["link"], r.get("round")) for r in rows):
        for scenario in BROWSER_SCENARIOS:
            if scenario == "idle":
                continue
            here = [r for r in rows if r["link"] == link and r.get("round") == round_
                    and r["scenario"] == scenario and r["p50 ms"] != ""]
            peers = [r for r in here if r["stack"].startswith("noVNC/")]
            if not peers:
                continue
            best = min(peers, key=lambda r: r["p50 ms"])
            for row in here:
                if row["stack"].startswith("console/"):
                    out.append({"link": link, **({} if round_ is None else {"round": round_}),
                                "stack": row["stack"], "scenario": scenario,
                                "vs": best["stack"],
                                "p50 ratio": row["p50 ms"] / best["p50 ms"],
                                "p99 ratio": row["p99 ms"] / best["p99 ms"]})
    return out


T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086)
"""Student's t at 97.5 % for 1, 2 ... 20 degrees of freedom (two-sided 95 % intervals)."""


def mean_interval(ratios_: list[float]) -> tuple[float, float, float]:
    """The geometric mean of ``ratios_`` and its 95 % interval (Student's t on their
    logarithms: a ratio and its inverse weigh alike)."""
    logs = [math.log(r) for r in ratios_]
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return math.exp(mean), math.nan, math.nan
    t = T_975[len(logs) - 2] if len(logs) - 2 < len(T_975) else 1.96
    half = t * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def over_rounds(ratio_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per link, stack and scenario, the rounds' ratios summed up: one run's ratio moves a
    few percent from run to run, more than the stacks differ on loopback typing."""
    out = []
    for key in dict.fromkeys((r["link"], r["stack"], r["scenario"]) for r in ratio_rows):
        rounds = [r for r in ratio_rows if (r["link"], r["stack"], r["scenario"]) == key]
        row: dict[str, Any] = dict(zip(("link", "stack", "scenario"), key, strict=True))
        row["rounds"] = len(rounds)
        for column in ("p50 ratio", "p99 ratio"):
            values = [r[column] for r in rounds]
            mean, low, high = mean_interval(values)
            row[f"{column} mean"] = mean
            row[f"{column} 95 %"] = f"{low:.3f}-{high:.3f}"
            row[f"{column} < 1"] = f"{sum(v < 1 for v in values)}/{len(values)}"
        out.append(row)
    return out


def links() -> list[tuple[int, LinkSpec | None]]:
    """Loopback (0), then the shaped links (1, 2 ...), or those ``BENCH_LINKS`` names by
    number (``BENCH_LINKS=0``: loopback only)."""
    every: list[LinkSpec | None] = [None, *LINKS]
    wanted = os.environ.get("BENCH_LINKS")
    numbers = [int(n) for n in wanted.split(",")] if wanted else range(len(every))
    return [(n, every[n]) for n in numbers]


def console_on_link(browser: Any, screen: Any, painter: Painter, desktop: Desktop,
                    movie: list[Any], work: Path, link: Link | None, index: int, label: str,
                    marker: int) -> tuple[list[dict[str, Any]], int]:
    """The console's rows, the agent across ``link`` (``None``: loopback)."""
    server = ServerProcess(work / f"server{index}", log_level=LOG_LEVEL)
    if link:  # the agent comes across the link; the page stays on loopback, which
        server.listen = "0.0.0.0"  # browsers trust as a secure context (WebCodecs)
    server.start()
    api = Api(server)
    agent_id, key = api.machine_with_key()
    agent_url = f"http://{link.near}:{server.port}" if link else server.url
    agent = AgentProcess(work / f"agent{index}", screen.display, "--server", agent_url,
                         "--key", key, "--log-level", LOG_LEVEL,
                         prefix=link.prefix if link else (),
                         REMOTE_AGENT_EXTRA_PLUGINS="codec_av1")
    try:
        session = api.live_session(agent_id)
        return console_rows(browser, server, agent, session["id"], painter, desktop, movie,
                            marker, label)
    finally:
        agent.stop()
        api.close()
        server.stop()


def run_link(browser: Any, screen: Any, painter: Painter, desktop: Desktop, movie: list[Any],
             work: Path, spec: LinkSpec | None, index: int,
             marker: int) -> tuple[list[dict[str, Any]], int]:
    """Both stacks over one link (``None``: loopback), :data:`ROUNDS` times in turns."""
    label = spec.name if spec else "loopback"
    rows: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        link = stack.enter_context(shaped_link(spec, index)) if spec else None
        for round_ in range(1, ROUNDS + 1):
            order = STACKS if round_ % 2 else STACKS[::-1]
            for name in order:
                if name == "console":
                    more, marker = console_on_link(browser, screen, painter, desktop, movie,
                                                   work / f"round{round_}", link, index, label,
                                                   marker)
                else:
                    more, marker = novnc_rows(browser, screen.display, painter, desktop,
                                              movie, marker, link, label)
                rows.extend({"link": row["link"], "round": round_} | row if ROUNDS > 1
                            else row for row in more)
    return rows, marker


def main() -> None:
    for tool in ("Xvfb", "x11vnc", "websockify"):
        if shutil.which(tool) is None:
            raise SystemExit(f"bench/browser.py needs {tool} (scripts/bootstrap installs it)")
    if not (NOVNC / "vnc_lite.html").exists():
        raise SystemExit("bench/browser.py needs noVNC (Debian's novnc; scripts/bootstrap)")
    work = Path(tempfile.mkdtemp(prefix="bench-browser-"))
    rows: list[dict[str, Any]] = []
    with xvfb(WIDTH, HEIGHT, set_display=False) as screen, chromium() as browser:
        painter = Painter(screen.display)
        desktop = Desktop(WIDTH, HEIGHT, seed=1, wallpaper_noise=WALLPAPER_NOISE)
        movie = [painter.upload(video_like(WIDTH, HEIGHT, t)) for t in range(8)]
        reset(painter, desktop)
        marker = 0
        with busy_loops(BUSY):
            for index, spec in links():
                more, marker = run_link(browser, screen, painter, desktop, movie, work,
                                        spec, index, marker)
                rows.extend(more)
        painter.close()
    busy = f", {BUSY} busy loops beside" if BUSY else ""
    report("browser", rows, title=f"Glass to glass in Chromium at {WIDTH}x{HEIGHT}, "
           f"{RATE} changes/s, {SECONDS:g} s per scenario{busy}", notes=[
               "console/<codec>: remote-agent -> remote-support serve -> the console's "
               "viewer; console/default: as the viewer starts (codec and quality Auto).",
               "noVNC/<variant>: x11vnc -> websockify -> noVNC vnc_lite.html; tuned: "
               "-defer 0 -wait 1 -xd_area 0.",
               "links: the sender (agent, x11vnc) behind a TUN pair shaped like tc netem "
               "(each direction half the round trip, the loss and the rate, a queue of "
               f"{QUEUE_SECONDS:g} s); the relay and the browser on this side.",
               "changes shown: changes whose marker a painted frame showed / changes drawn; "
               "fps: painted frames with a new marker per second; stall ms: the longest "
               "time without a newly painted change while changes were being made; frozen "
               "ms: the longest time the marker's row of pixels did not change meanwhile.",
               "frames by codec: the frames the page had, by codec; scaled: pictures it drew "
               "larger than they were coded (the agent was short of CPU); repeated: keyframes of "
               "the picture shown, which the page skipped.",
           ])
    report("browser_ratios", ratios(rows),
           title="The console over the best noVNC variant, same run and link (below 1: ahead)")
    if ROUNDS > 1:
        report("browser_rounds", over_rounds(ratios(rows)),
               title=f"The ratios over {ROUNDS} rounds: geometric mean, its 95 % interval, "
               "and the rounds below 1")


if __name__ == "__main__":
    main()

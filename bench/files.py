"""File transfer: throughput over loopback, and what a transfer costs a live H.264 picture.

One 1920x1080 Xvfb; ``remote-agent`` -> ``remote-support serve`` -> the Python
file client (``remote_viewer.files``, in a process of its own, as a technician's
files page is a tab of its own) and, at the same time where a row says so, the
Python screen viewer on the same session (in this process). The screen changes
completely 30 times a second (bench/agent.py's full-screen driver), streamed in
H.264.

Rows:

- ``download`` / ``upload`` alone: MB/s of one large file, SHA-256 checked at
  both ends (the agent's disk and the client's are this machine's);
- ``screen alone``: frames per second the screen viewer decodes with no transfer;
- ``console upload`` / ``console download``: a file of ``BENCH_CONSOLE_MB`` (default
  256) through the console's files page in headless Chromium (``files.html``: its own
  SHA-256 in JavaScript, a download kept in the browser until it is saved, which
  Chromium refuses past about 400 MB here);
- ``download + screen`` / ``upload + screen``: both at once (the screen moving for
  ``BENCH_SECONDS`` from a second into the transfer), the transfer's MB/s and the
  screen's fps while it moved side by side.

CPU is each process's user+system time over the whole row, in % of one core: the agent, the
server, the file client, and the screen viewer (this process, with the screen's driver).
All of them, and Xvfb, share this machine's cores; "machine busy %" is how much of all of
its cores was in use over the row (100: none was left).

Run: ``uv run python bench/files.py`` (``BENCH_FILE_MB``, default 1024, the file's
size; ``BENCH_SECONDS``, default 5, for the screen-alone row).
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from remote_server.testing.processes import (  # noqa: E402
    ADMIN_PASSWORD,
    AgentProcess,
    Api,
    ServerProcess,
)
from remote_viewer.client import ViewerClient, open_viewer  # noqa: E402
from remote_viewer.files import Download, open_files  # noqa: E402

from bench.agent import HEIGHT, RATE, WIDTH, Driver, cpu_seconds  # noqa: E402
from bench.report import report  # noqa: E402
from remote_core.protocol import pb  # noqa: E402
from remote_core.testing.browser import chromium, log_in  # noqa: E402
from remote_core.testing.codec_contract import Desktop, video_like  # noqa: E402
from remote_core.testing.xvfb import Painter, xvfb  # noqa: E402

MB = 1024 * 1024
FILE_MB = int(os.environ.get("BENCH_FILE_MB", "1024"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "5"))
CONSOLE_MB = int(os.environ.get("BENCH_CONSOLE_MB", "256"))


def files_token(api: Api, session_id: str) -> str:
    r = api.post(f"/api/sessions/{session_id}/viewer-token", params={"file_transfer": "true"})
    r.raise_for_status()
    return str(r.json()["token"])


class Screen:
    """Counts the frames a screen viewer decodes while it is switched on."""

    def __init__(self, viewer: ViewerClient) -> None:
        self.viewer = viewer
        self.frames = 0

    async def count(self) -> None:
        after = (await self.viewer.next_frame(30)).sequence
        while True:
            frame = await self.viewer.next_frame(30, after=after)
            self.frames += 1
            after = frame.sequence


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of every core of this machine, from /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle and iowait
    return sum(fields) - idle, sum(fields)


def own_cpu() -> float:
    """User+system seconds of this process (the screen viewer and the driver)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def transfer(direction: str, url: str, token: str, remote: str, local: Path) -> dict[str, Any]:
    """One transfer by the file client in a child process: its bytes, seconds and CPU."""
    child = subprocess.Popen([sys.executable, __file__, "transfer", direction, url, token,
                              remote, str(local)], stdout=subprocess.PIPE)
    assert child.stdout is not None
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"the {direction} failed ({child.returncode})")
    moved = json.loads(out)
    assert moved["sha256"] == sha256_of(local), f"the {direction}'s SHA-256 differs"
    if direction == "download":
        local.unlink()
    return {**moved, "bytes": FILE_MB * MB, "cpu": usage.ru_utime + usage.ru_stime}


async def run_row(name: str, pids: dict[str, int], screen: Screen | None,
                  painter: Painter, desktop: Desktop, movie: list[Any],
                  moving: Any = None) -> dict[str, Any]:
    """One row: a transfer (if any) and the screen moving (if a viewer watches). With both,
    the screen moves for ``SECONDS`` from a second into the transfer, and its frame rate is
    of those seconds: the transfer must outlast them (``BENCH_FILE_MB`` large enough)."""
    cpu0 = {k: cpu_seconds(pid) for k, pid in pids.items()}
    own0 = own_cpu()
    busy0 = machine_busy()
    started = time.perf_counter()
    moved: dict[str, Any] = {}
    frames, driven = 0, 0.0
    async with anyio.create_task_group() as group:
        if moving is not None:
            async def move() -> None:
                moved.update(await anyio.to_thread.run_sync(moving))
                moved["ended"] = time.perf_counter()
            group.start_soon(move)
        if screen is not None:
            await anyio.sleep(1.0 if moving is not None else 0.0)
            driver = Driver(painter, "full screen", desktop, movie, 1, SECONDS)
            frames0, began = screen.frames, time.perf_counter()
            driver.start()
            await anyio.to_thread.run_sync(driver.join)
            frames, driven = screen.frames - frames0, time.perf_counter() - began
            if moving is not None and "ended" in moved:
                raise SystemExit(f"{name}: the transfer ended before the screen stopped "
                                 "moving; raise BENCH_FILE_MB")
    elapsed = time.perf_counter() - started
    return {
        "row": name,
        "MB/s": moved["bytes"] / MB / moved["seconds"] if moved else "",
        "seconds": moved["seconds"] if moved else driven,
        "screen fps": frames / driven if screen else "",
        "agent CPU %": 100 * (cpu_seconds(pids["agent"]) - cpu0["agent"]) / elapsed,
        "server CPU %": 100 * (cpu_seconds(pids["server"]) - cpu0["server"]) / elapsed,
        "file client CPU %": 100 * moved["cpu"] / elapsed if moved else "",
        "screen viewer CPU %": 100 * (own_cpu() - own0) / elapsed if screen else "",
        "machine busy %": 100 * (machine_busy()[0] - busy0[0]) / (
            machine_busy()[1] - busy0[1]),
    }


async def measure(server: ServerProcess, api: Api, session_id: str, pids: dict[str, int],
                  root: Path, work: Path, painter: Painter, desktop: Desktop,
                  movie: list[Any]) -> list[dict[str, Any]]:
    source = work / "source.bin"
    rows = []

    def upload() -> dict[str, Any]:
        return transfer("upload", server.url, files_token(api, session_id),
                        f"/{root.name}/up.bin", source)

    def download() -> dict[str, Any]:
        return transfer("download", server.url, files_token(api, session_id),
                        f"/{root.name}/seed.bin", work / "down.bin")

    rows.append(await run_row("download alone", pids, None, painter, desktop, movie, download))
    rows.append(await run_row("upload alone", pids, None, painter, desktop, movie, upload))
    quality = pb.QualitySettings(preset=pb.QUALITY_BALANCED)
    async with open_viewer(server.url, api.viewer_token(session_id), codec="h264",
                           quality=quality) as viewer:
        screen = Screen(viewer)
        async with anyio.create_task_group() as group:
            group.start_soon(screen.count)
            await anyio.sleep(2.0)  # the codec settles on H.264
            rows.append(await run_row("screen alone (H.264)", pids, screen, painter,
                                      desktop, movie))
            rows.append(await run_row("download + screen", pids, screen, painter,
                                      desktop, movie, download))
            rows.append(await run_row("upload + screen", pids, screen, painter, desktop,
                                      movie, upload))
            group.cancel_scope.cancel()
    return rows


async def one_transfer(direction: str, url: str, token: str, remote: str,
                       local: Path) -> dict[str, Any]:
    """The child's part: move one file and say how long it took."""
    async with open_files(url, token) as files:
        started = time.perf_counter()
        if direction == "upload":
            got = await files.upload(local, remote, overwrite=True)
        else:
            got = await files.download(Download(remote, local))
        return {"sha256": got, "seconds": time.perf_counter() - started}


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(MB), b""):
            digest.update(block)
    return digest.hexdigest()


def console_rows(server: ServerProcess, session_id: str, root: Path,
                 work: Path) -> list[dict[str, Any]]:
    """A file through the console's files page, up and then down, as a technician moves
    it: picked in the page, saved from it."""
    rows = []
    with chromium() as browser:
        context = browser.new_context(accept_downloads=True)
        page = context.new_page()
        log_in(page, server.url, "admin", ADMIN_PASSWORD)
        page.wait_for_selector("#machines, nav", timeout=30_000)
        with page.expect_popup() as popup:
            page.evaluate("(id) => window.open(`./files.html?session=${id}`)", session_id)
        files = popup.value
        files.wait_for_selector("#state[data-state=connected]", timeout=30_000)
        files.fill("#path", f"/{root.name}")
        files.click("#path-form button")
        files.wait_for_selector("#entries tr[data-name='seed.bin']", timeout=30_000)
        started = time.perf_counter()
        files.set_input_files("#pick-files", str(work / "console.bin"))
        while True:
            moving = files.evaluate("window.remoteFiles.transfers()")
            if moving and moving[0]["state"] not in ("queued", "running", "verifying"):
                break
            time.sleep(0.05)
        seconds = time.perf_counter() - started
        if moving[0]["state"] != "done":
            raise SystemExit(f"the console's upload ended {moving[0]['state']}: {moving[0]}")
        rows.append({"row": "console upload", "MB/s": CONSOLE_MB / seconds, "seconds": seconds})
        files.click("#refresh")
        button = files.locator("#entries tr[data-name='console.bin'] button", has_text="Download")
        started = time.perf_counter()
        with files.expect_download(timeout=1_200_000) as saved:
            button.click()
        saved.value.path()  # written out
        seconds = time.perf_counter() - started
        rows.append({"row": "console download", "MB/s": CONSOLE_MB / seconds,
                     "seconds": seconds})
        context.close()
    return rows


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-files-"))
    root = work / "shared"
    root.mkdir()
    with (work / "source.bin").open("wb") as out:
        for _ in range(FILE_MB):
            out.write(os.urandom(MB))
    os.link(work / "source.bin", root / "seed.bin")
    with (work / "console.bin").open("wb") as out:
        for _ in range(CONSOLE_MB):
            out.write(os.urandom(MB))
    with xvfb(WIDTH, HEIGHT, set_display=False) as display:
        painter = Painter(display.display)
        desktop = Desktop(WIDTH, HEIGHT, seed=1)
        painter.put_bgra(0, 0, WIDTH, HEIGHT, desktop.image.tobytes())
        movie = [painter.upload(video_like(WIDTH, HEIGHT, t)) for t in range(8)]
        painter.sync()
        server = ServerProcess(work / "server", log_level="warning").start()
        api = Api(server)
        agent_id, key = api.machine_with_key()
        agent = AgentProcess(work / "agent", display.display, "--server", server.url,
                             "--key", key, "--log-level", "warning",
                             REMOTE_AGENT_FILE_ROOTS=str(root))
        try:
            session = api.live_session(agent_id)
            pids = {"agent": agent.process.pid,
                    "server": server.process.pid}  # type: ignore[union-attr]
            rows = anyio.run(measure, server, api, session["id"], pids, root, work, painter,
                             desktop, movie)
            rows[2:2] = console_rows(server, session["id"], root, work)
        finally:
            agent.stop()
            api.close()
            server.stop()
            painter.close()
    report("files", rows, title=f"File transfer over loopback: one {FILE_MB} MiB file, and "
           f"an H.264 screen at {WIDTH}x{HEIGHT} changing {RATE} times a second", notes=[
               "MB/s: MiB moved per second, SHA-256 checked at both ends; the agent reads and "
               "writes its file root, the client its own folder, both on this machine's disk.",
               "screen fps: frames the Python viewer decoded per second of the row.",
               "console rows: MB/s from the pick (or the click) to the page's done (or the "
               "saved download), in headless Chromium on this same machine.",
           ])


if __name__ == "__main__":
    if sys.argv[1:2] == ["transfer"]:
        direction, url, token, remote, local = sys.argv[2:7]
        print(json.dumps(anyio.run(one_transfer, direction, url, token, remote, Path(local))))
    else:
        main()

"""A codec plugin from outside the project, installed as its own distribution, end to end.

``examples/codec_png`` is built and installed the way a packager would
(``uv pip install --target``, its Pillow and numpy from the environment) and
loaded by name: a real agent on Xvfb streams through a real ``remote-support
serve`` to the Python viewer and to the browser console's viewer (its
``png.js`` served by the server under the shipped CSP), both checked pixel
for pixel, while viewers that do not decode ``png`` (the stock
``remote-viewer``, a Python viewer without the plugin) join mid-stream and
still get pictures. The example's own tests run against the installed copy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from remote_server.testing.processes import (
    ADMIN_PASSWORD,
    AgentProcess,
    Api,
    ServerProcess,
)
from remote_viewer.client import Frame, ViewerClient, open_viewer

from remote_core.plugins import Plugins, get_plugin_manager
from remote_core.settings import PluginSettings
from remote_core.testing.xvfb import Painter, Xvfb, xvfb

pytestmark = [pytest.mark.slow, pytest.mark.xvfb]

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "codec_png"
BUILTIN_CODECS = "codec_raw_zstd,codec_vp9,codec_h264"
WIDTH, HEIGHT = 640, 480
PATTERN = [(0, 0, WIDTH, HEIGHT, 0x203040), (40, 40, 160, 120, 0xFF0000),
           (300, 60, 200, 150, 0x00FF00), (80, 260, 180, 140, 0x0000FF)]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example distribution built from its source and installed into a directory."""
    target = tmp_path_factory.mktemp("third-party-codec") / "site-packages"
    uv = shutil.which("uv")
    assert uv, "uv is on PATH under scripts/test"
    subprocess.run([uv, "pip", "install", "--quiet", "--no-deps", "--python", sys.executable,
                    "--target", str(target), str(EXAMPLE)], check=True, timeout=300)
    assert (target / "remote_codec_png" / "png.js").exists()
    return target


def test_the_example_passes_its_own_tests_as_installed(installed: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(EXAMPLE / "tests")],
        env={**os.environ, "PYTHONPATH": str(installed)}, capture_output=True, text=True,
        timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "passed" in done.stdout and str(installed) not in done.stderr


@dataclass
class Stage:
    """A live session: server and agent with the plugin, an admin's API, the display."""

    server: ServerProcess
    api: Api
    display: Xvfb
    session_id: str

    def token(self) -> str:
        return self.api.viewer_token(self.session_id)

    def paint(self, blocks: list[tuple[int, int, int, int, int]]) -> None:
        painter = Painter(self.display.display)
        try:
            for x, y, w, h, rgb in blocks:
                painter.fill(x, y, w, h, rgb)
            painter.sync()
        finally:
            painter.close()


@pytest.fixture(scope="module")
def stage(tmp_path_factory: pytest.TempPathFactory, installed: Path) -> Iterator[Stage]:
    root = tmp_path_factory.mktemp("png-e2e")
    with xvfb(WIDTH, HEIGHT, set_display=False) as display:
        server = ServerProcess(root / "server", extra_plugins="codec_png")
        server.env["PYTHONPATH"] = str(installed)
        server.start()
        api = Api(server)
        agent = None
        try:
            agent_id, key = api.machine_with_key()
            agent = AgentProcess(root / "agent", display.display, "--server", server.url,
                                 "--key", key, PYTHONPATH=str(installed),
                                 REMOTE_AGENT_EXTRA_PLUGINS="codec_png")
            stage = Stage(server, api, display, api.live_session(agent_id)["id"])
            stage.paint(PATTERN)
            yield stage
        finally:
            if agent is not None:
                agent.stop()
            api.close()
            server.stop()


def viewer_plugins(installed: Path, monkeypatch: pytest.MonkeyPatch, *,
                   png: bool) -> Plugins:
    """The codecs a Python viewer loads: the built-ins, and the example when ``png``."""
    monkeypatch.syspath_prepend(str(installed))
    names = BUILTIN_CODECS.split(",") + (["codec_png"] if png else [])
    return get_plugin_manager(PluginSettings(plugins=tuple(names)))


def near(image: Any, x: int, y: int, colour: int, tolerance: int) -> bool:
    want = ((colour >> 16) & 255, (colour >> 8) & 255, colour & 255)
    got = (int(image[y, x, 2]), int(image[y, x, 1]), int(image[y, x, 0]))
    return all(abs(a - b) <= tolerance for a, b in zip(got, want, strict=True))


def shows(image: Any, blocks: list[tuple[int, int, int, int, int]], tolerance: int = 0) -> bool:
    """Each block's centre in ``image`` (BGRA) is its colour, exactly or within ``tolerance``
    (a lossy codec's)."""
    return image.shape[:2] == (HEIGHT, WIDTH) and all(
        near(image, x + w // 2, y + h // 2, colour, tolerance) for x, y, w, h, colour in blocks)


async def frame_of(viewer: ViewerClient, codec: str, *, within: float = 20.0,
                   blocks: list[tuple[int, int, int, int, int]] | None = None,
                   tolerance: int = 0) -> Frame:
    """The first frame in ``codec`` that shows ``blocks``."""
    with anyio.fail_after(within):
        after = 0
        while True:
            frame = await viewer.next_frame(within, after=after)
            after = frame.sequence
            if frame.codec == codec and (blocks is None or shows(frame.image, blocks, tolerance)):
                return frame


@pytest.mark.anyio
async def test_the_python_viewer_draws_png_pixel_exact(stage: Stage, installed: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    plugins = viewer_plugins(installed, monkeypatch, png=True)
    async with open_viewer(stage.server.url, stage.token(), codec="png",
                           plugins=plugins) as viewer:
        first = await frame_of(viewer, "png", blocks=PATTERN[1:])
        pattern = np.random.default_rng(3).integers(0, 256, (48, 64, 4), dtype=np.uint8)
        painter = Painter(stage.display.display)
        try:
            painter.put_bgra(400, 300, 64, 48, pattern.tobytes())
            painter.sync()
        finally:
            painter.close()
        frame = await viewer.wait_for_image(
            lambda image: np.array_equal(image[300:348, 400:464, :3], pattern[:, :, :3]), 15)
        assert frame.codec == "png" and not frame.keyframe and frame.sequence > first.sequence
        assert frame.size < 64 * 64 * 4 * 3  # only the changed band travelled
        stage.paint(PATTERN[:1] + PATTERN[1:])  # leave the display as the others expect


@pytest.mark.anyio
async def test_a_viewer_without_png_joins_mid_stream_and_still_draws(
        stage: Stage, installed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with_png = viewer_plugins(installed, monkeypatch, png=True)
    without = get_plugin_manager(PluginSettings(plugins=tuple(BUILTIN_CODECS.split(","))))
    assert "png" not in [spec.name for spec in without.codecs()]
    async with open_viewer(stage.server.url, stage.token(), codec="png",
                           plugins=with_png) as chooser:
        await frame_of(chooser, "png", blocks=PATTERN[1:])
        async with open_viewer(stage.server.url, stage.token(), view_only=True,
                               plugins=without) as joiner:
            mark = (500, 400, 60, 40, 0xFFA500)
            stage.paint([mark])
            seen = await joiner.wait_for_image(
                lambda image: shows(image, [*PATTERN[1:], mark], tolerance=16), 20)
            assert seen.codec != "png"
            # The chooser decodes both: it follows the stream onto the common codec.
            await frame_of(chooser, seen.codec, blocks=[mark], tolerance=16)
        # With the joiner gone, the stream goes back to the codec asked for.
        stage.paint([(500, 400, 60, 40, 0x102030)])
        await frame_of(chooser, "png", blocks=[(500, 400, 60, 40, 0x102030)])


CANVAS_PIXEL = """([x, y]) => Array.from(
  document.getElementById("screen").getContext("2d").getImageData(x, y, 1, 1).data.slice(0, 3))"""


VIEWER_STATE = """() => { const s = window.remoteViewer; return {frames: s.codecFrames,
  drawn: s.drawn, width: s.width, height: s.height, plugin: s.pluginCodec,
  notice: document.getElementById("notice").textContent, centre: Array.from(
    document.getElementById("screen").getContext("2d").getImageData(120, 100, 1, 1).data)}; }"""


def canvas_shows(page: Any, blocks: list[tuple[int, int, int, int, int]]) -> bool:
    if page.evaluate("window.remoteViewer.width") != WIDTH:
        return False
    for x, y, w, h, colour in blocks:
        found = page.evaluate(CANVAS_PIXEL, [x + w // 2, y + h // 2])
        if found != [(colour >> 16) & 255, (colour >> 8) & 255, colour & 255]:
            return False
    return True


def test_the_browser_viewer_draws_png_under_the_shipped_csp_beside_a_stock_viewer(
        stage: Stage, tmp_path: Path) -> None:
    pytest.importorskip("playwright.sync_api")
    from remote_core.testing.browser import chromium, wait_until, watched_context

    with chromium() as browser, watched_context(browser) as context:
        page = context.new_page()
        page.goto(f"{stage.server.url}/console/")
        page.fill("input[name=username]", "admin")
        page.fill("input[name=password]", ADMIN_PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_selector("nav .who")
        page.goto(f"{stage.server.url}/console/viewer.html?session={stage.session_id}")
        page.wait_for_selector("#state[data-state=connected]", timeout=30_000)
        assert "png" in page.evaluate("window.remoteViewer.codecs.names")
        page.select_option("#codec", "png")
        mark = (220, 200, 100, 60, 0xC000C0)
        wait_until(lambda: page.evaluate("window.remoteViewer.codecFrames.png || 0") > 0,
                   what="a png frame in the browser")
        stage.paint([mark])
        wait_until(lambda: canvas_shows(page, [*PATTERN[1:], mark]),
                   what=lambda: "the pattern drawn exactly from png frames; the viewer's "
                                f"state: {page.evaluate(VIEWER_STATE)}")
        assert page.evaluate("window.remoteViewer.pluginCodec") == "png"
        assert page.inner_text("#notice") == ""
        # The stock remote-viewer (no png plugin) joins while the page asked for png.
        shot = tmp_path / "stock.png"
        done = subprocess.run(
            [sys.executable, "-m", "remote_viewer.cli", "--server", stage.server.url,
             "--token", stage.token(), "screenshot", str(shot)],
            env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
            capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        assert shot.read_bytes().startswith(b"\x89PNG") and f"{WIDTH}x{HEIGHT}" in done.stdout
        # And the page still draws, in whatever codec everyone decodes now.
        stage.paint([(mark[0], mark[1], mark[2], mark[3], 0x00C0C0)])
        wait_until(lambda: canvas_shows(page, [(mark[0], mark[1], mark[2], mark[3], 0x00C0C0)]),
                   what="the page drawing after the stock viewer came")

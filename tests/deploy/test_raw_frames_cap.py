"""Raw frames of 1920x1080 and 3840x2160 screens through the shipped 16 MiB message cap.

A real agent on an Xvfb screen of each size streams with the raw codec to a
real server (shipped settings: ``max_message_bytes`` 16 MiB) and a Python
viewer. Desktop content compresses far below the cap; noise does not: a raw
3840x2160 keyframe of it is 33 MB, which the server used to answer by closing
the agent's socket with 1009, so the session ended and began again forever.
Now such a picture goes in parts that each fit (``remote_codec_raw_zstd.parts``)
and the viewer, the Python one and the console's in Chromium, must show it
exactly, on the same session, the agent never dropped.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import numpy as np
import numpy.typing as npt
import pytest
from remote_server.testing.processes import ADMIN_PASSWORD, AgentProcess, Api, ServerProcess
from remote_viewer.client import open_viewer

from remote_core.protocol import pb
from remote_core.testing.browser import chromium, wait_until, watched_context
from remote_core.testing.codec_contract import Desktop
from remote_core.testing.xvfb import Painter, Xvfb

pytestmark = [pytest.mark.slow, pytest.mark.xvfb]

CAP = 16 * 1024 * 1024  # the shipped max_message_bytes


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path_factory.mktemp("server")).start()
    assert "REMOTE_SUPPORT_MAX_MESSAGE_BYTES" not in process.env  # the shipped cap
    yield process
    process.stop()


@pytest.fixture(scope="module")
def api(server: ServerProcess) -> Iterator[Api]:
    client = Api(server)
    yield client
    client.close()


def content(kind: str, width: int, height: int) -> npt.NDArray[np.uint8]:
    if kind == "desktop":
        return Desktop(width, height).image
    image = np.random.default_rng(5).integers(0, 256, (height, width, 4), dtype=np.uint8)
    image[..., 3] = 255
    return image


def show(display: Xvfb, image: npt.NDArray[np.uint8]) -> None:
    painter = Painter(display.display)
    try:
        height, width = image.shape[:2]
        painter.blit(painter.upload(image), 0, 0, width, height)
        painter.sync()
    finally:
        painter.close()


@pytest.mark.parametrize("kind", ["desktop", "noise"])
@pytest.mark.parametrize("size", [(1920, 1080), (3840, 2160)], ids=["1080p", "2160p"])
def test_a_raw_screen_arrives_exactly_through_the_shipped_cap(
        tmp_path: Path, server: ServerProcess, api: Api,
        size: tuple[int, int], kind: str) -> None:
    width, height = size
    image = content(kind, width, height)
    display = Xvfb(width, height).start()
    agent_id, key = api.machine_with_key()
    agent = AgentProcess(tmp_path / "agent", display.display,
                         "--server", server.url, "--key", key)
    try:
        show(display, image)
        session = api.live_session(agent_id)

        async def watch() -> tuple[float, int, int]:
            async with open_viewer(server.url, api.viewer_token(session["id"]),
                                   codec=pb.CODEC_RAW) as viewer:
                started = time.monotonic()
                frame = await viewer.wait_for_image(
                    lambda shown: shown.shape == image.shape
                    and np.array_equal(shown[..., :3], image[..., :3]), within=60)
                assert frame.codec == "raw"
                return time.monotonic() - started, viewer.frames_received, \
                    viewer.bytes_received

        took, frames, received = anyio.run(watch)
        print(f"\n{width}x{height} {kind}: exact after {took:.2f} s, {frames} raw frames, "
              f"{received / 1e6:.1f} MB received")
        assert api.live_session(agent_id)["id"] == session["id"]  # never dropped
        assert "1009" not in agent.output() and "connection lost" not in agent.output()
    finally:
        agent.stop()
        display.stop()


PIXELS = """(points) => { const c = document.getElementById("screen").getContext("2d");
  return points.map(([x, y]) => Array.from(c.getImageData(x, y, 1, 1).data.slice(0, 3))); }"""


@pytest.mark.browser
@pytest.mark.parametrize("size", [(1920, 1080), (3840, 2160)], ids=["1080p", "2160p"])
def test_the_browser_viewer_draws_a_noisy_raw_screen_exactly(
        tmp_path: Path, server: ServerProcess, api: Api, size: tuple[int, int]) -> None:
    """The console's viewer draws parts as it draws any raw frame: sample points all over
    the screen, the last rows included, show the screen's exact colours."""
    pytest.importorskip("playwright.sync_api")
    width, height = size
    image = content("noise", width, height)
    rng = np.random.default_rng(9)
    points = [[int(x), int(y)] for x, y in zip(rng.integers(0, width, 60),
                                               rng.integers(0, height, 60), strict=True)]
    points += [[0, 0], [width - 1, height - 1], [width // 2, height - 1]]
    expected = [[int(image[y, x, 2]), int(image[y, x, 1]), int(image[y, x, 0])]
                for x, y in points]
    display = Xvfb(width, height).start()
    agent_id, key = api.machine_with_key()
    agent = AgentProcess(tmp_path / "agent", display.display,
                         "--server", server.url, "--key", key)
    try:
        show(display, image)
        session = api.live_session(agent_id)
        with chromium() as browser, \
                watched_context(browser, viewport={"width": 1280, "height": 800}) as context:
            page = context.new_page()
            page.goto(f"{server.url}/console/")
            page.fill("input[name=username]", "admin")
            page.fill("input[name=password]", ADMIN_PASSWORD)
            page.click("button[type=submit]")
            page.wait_for_selector("nav .who")
            page.goto(f"{server.url}/console/viewer.html?session={session['id']}")
            page.wait_for_selector("#state[data-state=connected]", timeout=30_000)
            page.select_option("#codec", "raw")  # the codec menu offers codecs by name
            wait_until(lambda: page.evaluate(PIXELS, points) == expected, timeout=60,
                       what=lambda: f"the screen's colours; the viewer counts "
                                    f"{page.evaluate('window.remoteViewer.codecFrames')}")
        assert api.live_session(agent_id)["id"] == session["id"]
    finally:
        agent.stop()
        display.stop()

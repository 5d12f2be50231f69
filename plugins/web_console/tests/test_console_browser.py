"""The console and the browser viewer in a real Chromium, against a real server and agent.

Everything runs under the headers the server ships: no CSP bypass, and every
page error, console error or CSP violation fails the test
(:func:`~remote_core.testing.browser.watched_context`). Log in, create a
support code, start a real agent under Xvfb with it, grant consent in the
agent's dialog, see the agent's screen in the canvas through each codec the
viewer offers (pixel checks of a known pattern), click to move the real X
pointer, and see that a view-only technician cannot. Screenshots land in
docs/ for the README. Page state is read by polling ``page.evaluate`` from
Python or by locators on the ``data-state`` the page keeps current.
"""

from __future__ import annotations

import base64
import dataclasses
import importlib
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import zstandard
from remote_server.testing.processes import ADMIN_PASSWORD, AgentProcess, Api, ServerProcess

from remote_core.testing.browser import log_in, wait_until, watched_context
from remote_core.testing.codec_contract import Desktop, video_like
from remote_core.testing.processes import stop_process
from remote_core.testing.xvfb import Painter, Xvfb, scroll_page, xvfb

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.xvfb]

DOCS = Path(__file__).resolve().parents[3] / "docs"
DIALOG = "Remote support request"
WIDTH, HEIGHT = 800, 600
VIEWPORT = {"width": 1280, "height": 800}
# A known pattern on the agent's screen: (x, y, w, h, 0xRRGGBB).
PATTERN = [
    (0, 0, WIDTH, HEIGHT, 0x203040),
    (100, 100, 200, 150, 0xFF0000),
    (450, 100, 200, 150, 0x00FF00),
    (100, 350, 200, 150, 0x0000FF),
    (450, 350, 200, 150, 0xFFFFFF),
]
TECH_PASSWORD = "view-only-tech-pass"
# Each codec the viewer offers (its <option> value is the codec's wire name): the
# per-channel tolerance of its pixels, and a colour only it ever paints (so a match
# proves it drew).
CODECS = {
    "raw": (0, 0xFFA500),
    "vp9": (16, 0x00C0C0),
    "h264": (16, 0xC000C0),
    "av1": (16, 0x60C060),  # an opt-in plugin: the agent below loads it
}
MARK = (300, 260, 120, 80)
LAST = "av1"
"""Drawn by the module's last test: an AV1 stream costs two cores the most, so the other
tests never share the machine with one."""


@pytest.fixture(scope="module")
def display() -> Iterator[Xvfb]:
    with xvfb(WIDTH, HEIGHT, set_display=False) as server:
        yield server


def paint(display: Xvfb, blocks: list[tuple[int, int, int, int, int]]) -> None:
    """Draw on the root window (after the consent dialog is gone: an unmapped window
    exposes the root's plain background)."""
    painter = Painter(display.display)
    try:
        for x, y, w, h, rgb in blocks:
            painter.fill(x, y, w, h, rgb)
        painter.sync()
    finally:
        painter.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path_factory.mktemp("console-server")).start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def admin(server: ServerProcess) -> Iterator[Api]:
    """One admin login for the module's REST calls: the login limit (8 a minute from one
    address) is the shipped one, and the browser tests log in from the same address."""
    api = Api(server)
    yield api
    api.close()



def pointer(display: Xvfb) -> tuple[int, int]:
    out = subprocess.run(["xdotool", "getmouselocation", "--shell"], env=display.env(),
                         check=True, capture_output=True, text=True, timeout=10).stdout
    values = dict(line.split("=", 1) for line in out.split())
    return int(values["X"]), int(values["Y"])


def press_in_dialog(display: Xvfb, keys: str) -> None:
    found = subprocess.run(["xdotool", "search", "--sync", "--onlyvisible", "--name", DIALOG],
                           env=display.env(), check=True, capture_output=True, text=True,
                           timeout=30)
    window = found.stdout.split()[0]
    subprocess.run(["xdotool", "windowfocus", "--sync", window, "key", keys],
                   env=display.env(), check=True, timeout=10)


CANVAS_POINT = """([x, y]) => {
  const c = document.getElementById("screen");
  const b = c.getBoundingClientRect();
  const s = Math.min(b.width / c.width, b.height / c.height);
  return [b.left + (b.width - c.width * s) / 2 + (x + 0.5) * s,
          b.top + (b.height - c.height * s) / 2 + (y + 0.5) * s];
}"""

CANVAS_PIXEL = """([x, y]) => Array.from(
  document.getElementById("screen").getContext("2d").getImageData(x, y, 1, 1).data.slice(0, 3))"""


VIEWER_STATE = """() => { const s = window.remoteViewer; return {codec: s.decoderCodec,
  frames: s.codecFrames, drawn: s.drawn, width: s.width, height: s.height,
  state: document.getElementById("state").textContent}; }"""


def rgb(value: int) -> list[int]:
    return [(value >> 16) & 255, (value >> 8) & 255, value & 255]


def pixel_near(page: Any, x: int, y: int, colour: int, tolerance: int) -> bool:
    found = page.evaluate(CANVAS_PIXEL, [x, y])
    return all(abs(a - b) <= tolerance for a, b in zip(found, rgb(colour), strict=True))


def wait_for_blocks(page: Any, blocks: list[tuple[int, int, int, int, int]],
                    tolerance: int) -> None:
    """Each block shows in the canvas at its centre, exactly or within ``tolerance``."""
    wait_until(lambda: page.evaluate("window.remoteViewer.width") == WIDTH,
               what="the remote screen's size")
    for x, y, w, h, colour in blocks:
        wait_for_pixel(page, x + w // 2, y + h // 2, colour, tolerance)


def wait_for_pixel(page: Any, x: int, y: int, colour: int, tolerance: int) -> None:
    wait_until(lambda: pixel_near(page, x, y, colour, tolerance),
               what=lambda: f"#{colour:06x} at ({x}, {y}); the canvas shows "
                            f"{page.evaluate(CANVAS_PIXEL, [x, y])}, the viewer's state: "
                            f"{page.evaluate(VIEWER_STATE)}")


def click_remote(page: Any, x: int, y: int) -> None:
    px, py = page.evaluate(CANVAS_POINT, [x, y])
    page.mouse.click(px, py)


def pointer_reaches(display: Xvfb, target: tuple[int, int]) -> bool:
    try:
        return bool(wait_until(lambda: pointer(display) == target, timeout=5))
    except AssertionError:
        return False


@dataclass
class Attended:
    """A live attended session: the console page, its viewer popup, the agent."""

    page: Any
    viewer: Any
    agent: AgentProcess


@pytest.fixture(scope="module")
def attended(tmp_path_factory: pytest.TempPathFactory, display: Xvfb, server: ServerProcess,
             browser: Any) -> Iterator[Attended]:
    """Log in, hand a code to a real agent, consent in its dialog, open the viewer."""
    DOCS.mkdir(exist_ok=True)
    with watched_context(browser, viewport=VIEWPORT) as context:
        page = context.new_page()
        log_in(page, server.url, "admin", ADMIN_PASSWORD)
        page.click("nav >> text=Support codes")
        page.click("#create-code")
        code = page.inner_text("#big-code").strip()
        assert len(code) == 11 and code[3] == "-" and code[7] == "-"
        agent = AgentProcess(tmp_path_factory.mktemp("agent"), display.display,
                             "--server", server.url, "--code", code,
                             REMOTE_AGENT_EXTRA_PLUGINS="codec_av1")
        try:
            page.wait_for_selector("#code-state >> text=Waiting for consent", timeout=30_000)
            page.screenshot(path=str(DOCS / "console-support-code.png"))
            press_in_dialog(display, "alt+a")
            page.wait_for_selector("#code-state >> text=Connected", timeout=30_000)
            paint(display, PATTERN)
            with page.expect_popup() as popup:
                page.click("#current-code .open-viewer")
            viewer = popup.value
            viewer.wait_for_selector("#state[data-state=connected]", timeout=30_000)
            wait_for_blocks(viewer, PATTERN[1:], tolerance=16)  # the default codec
            yield Attended(page, viewer, agent)
        finally:
            agent.stop()


def test_this_chromium_decodes_the_offered_codecs(attended: Attended) -> None:
    for codec in ("vp09.00.10.08", "avc1.42E01F", "av01.0.08M.08"):
        support = attended.viewer.evaluate(
            "(codec) => VideoDecoder.isConfigSupported({codec}).then((s) => s.supported)", codec)
        assert support, f"WebCodecs in this Chromium does not decode {codec}"
    listed = attended.viewer.evaluate("window.remoteViewer.codecs.names")
    assert listed[:4] == ["raw", "vp9", "h264", "av1"]
    # On the wire, the extensions it draws follow: moves, raw over video, keyframe parts
    # over the picture, scaled VP9 and H.264.
    assert attended.viewer.evaluate("window.remoteViewer.listed") == [
        *listed, "raw_copy", "raw_over", "raw_keep", "vp9_scaled", "h264_scaled"]
    # Every codec the page advertises is one the test below sees it draw.
    assert set(listed) <= set(CODECS), f"advertised but not tested: {set(listed) - set(CODECS)}"
    menu = attended.viewer.eval_on_selector_all("#codec option", "(os) => os.map((o) => o.value)")
    assert menu == ["", *listed]


@pytest.mark.parametrize("codec", [c for c in CODECS if c != LAST])
def test_each_codec_draws_the_remote_screen(attended: Attended, display: Xvfb,
                                            codec: str) -> None:
    draws(attended, display, codec)


PICTURE_WATCH = """() => {
  // How decoded pictures reach the canvas: drawn as VideoFrames, or converted (copyTo).
  const watch = window.pictureWatch = { drawn: 0, converted: 0,
    draw: CanvasRenderingContext2D.prototype.drawImage, copy: VideoFrame.prototype.copyTo };
  CanvasRenderingContext2D.prototype.drawImage = function (image, ...rest) {
    if (image instanceof VideoFrame) watch.drawn += 1;
    return watch.draw.call(this, image, ...rest);
  };
  VideoFrame.prototype.copyTo = function (...args) {
    if (args[1]?.format === "RGBA") watch.converted += 1;
    return watch.copy.apply(this, args);
  };
}"""

PICTURE_UNWATCH = """() => { const watch = window.pictureWatch;
  CanvasRenderingContext2D.prototype.drawImage = watch.draw;
  VideoFrame.prototype.copyTo = watch.copy;
  return { drawn: watch.drawn, converted: watch.converted }; }"""


def draws(attended: Attended, display: Xvfb, codec: str) -> None:
    """The viewer switched to ``codec`` draws a change made after the switch. A decoded
    picture is converted to RGBA by the browser and put on the canvas, never drawn as a
    VideoFrame: where the CPU draws the canvas, drawImage took twice the page's CPU in
    bench/browser.py (full screen)."""
    tolerance, colour = CODECS[codec]
    viewer = attended.viewer
    viewer.select_option("#codec", codec)
    count = f"window.remoteViewer.codecFrames.{codec} || 0"
    wait_until(lambda: viewer.evaluate(count) > 0, what=f"a {codec} frame")
    before = viewer.evaluate(count)
    viewer.evaluate(PICTURE_WATCH)
    try:
        paint(display, [(*MARK, colour)])  # drawn after the switch: only this codec carries it
        wait_for_blocks(viewer, [(*MARK, colour)], tolerance)
        wait_for_blocks(viewer, PATTERN[1:], tolerance)
    finally:
        pictures = viewer.evaluate(PICTURE_UNWATCH)
    assert viewer.evaluate(count) > before
    if codec != "raw":
        assert viewer.evaluate("window.remoteViewer.decoderCodec") == codec
        assert pictures["converted"] > 0 and pictures["drawn"] == 0, pictures
    viewer.select_option("#codec", "")  # the module's later tests see the stream as it starts


CANVAS_RGB = """() => { const c = document.getElementById("screen");
  const data = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
  const rgb = new Uint8Array(data.length / 4 * 3);
  for (let i = 0, j = 0; i < data.length; i += 4, j += 3) rgb.set(data.subarray(i, i + 3), j);
  let text = "";
  for (let i = 0; i < rgb.length; i += 0x8000) {
    text += String.fromCharCode.apply(null, rgb.subarray(i, i + 0x8000));
  }
  return btoa(text); }"""


def canvas_shows(page: Any, image: Any) -> bool:
    """Whether the canvas holds exactly ``image`` (BGRA), pixel for pixel."""
    shown = base64.b64decode(page.evaluate(CANVAS_RGB))
    return shown == image[:, :, 2::-1].tobytes()


def test_a_scroll_is_drawn_as_a_move_pixel_exact(attended: Attended, display: Xvfb) -> None:
    """A page scrolling on the remote screen reaches the canvas as moves of what it shows
    (the page lists raw_copy) plus the uncovered lines, exactly, with the default codec."""
    viewer = attended.viewer
    desktop = Desktop(WIDTH, HEIGHT, seed=21)
    painter = Painter(display.display)
    try:
        painter.put_bgra(0, 0, WIDTH, HEIGHT, desktop.image.tobytes())
        painter.sync()
        wait_until(lambda: canvas_shows(viewer, desktop.image), what="the page, exactly")
        moves = viewer.evaluate("window.remoteViewer.moves")
        for step in range(24):
            scroll_page(painter, desktop)
            painter.sync()
            if step < 4:  # each one exact at once, long before a keyframe (10 s) could be
                wait_until(lambda: canvas_shows(viewer, desktop.image), timeout=3,
                           what="the scrolled page, exactly")
            else:  # then 30 scrolls a second
                time.sleep(1 / 30)
    finally:
        painter.close()
    wait_until(lambda: canvas_shows(viewer, desktop.image), timeout=3,
               what="the scrolled page, exactly")
    assert viewer.evaluate("window.remoteViewer.moves") - moves >= 5
    paint(display, PATTERN)  # as the module's other tests expect the screen
    wait_for_blocks(viewer, PATTERN[1:], tolerance=16)


def test_after_motion_the_exact_picture_is_drawn_over_the_video_one(
        attended: Attended, display: Xvfb) -> None:
    """With the default codec, a moving screen goes out in a video codec; once it is calm,
    the lossless picture comes back as raw frames drawn over the video picture (the page
    lists raw_over), exactly, without a raw keyframe."""
    viewer = attended.viewer
    still = Desktop(WIDTH, HEIGHT, seed=22)
    painter = Painter(display.display)
    try:
        redraws = viewer.evaluate("window.remoteViewer.redraws")
        movie = [painter.upload(video_like(WIDTH, HEIGHT, t)) for t in range(4)]
        deadline = time.monotonic() + 20
        step = 0
        while viewer.evaluate("window.remoteViewer.pictureCodec") not in CODECS.keys() - {"raw"}:
            assert time.monotonic() < deadline, viewer.evaluate(VIEWER_STATE)
            painter.blit(movie[step % len(movie)], 0, 0, WIDTH, HEIGHT)
            painter.sync()
            step += 1
            time.sleep(1 / 30)
        painter.put_bgra(0, 0, WIDTH, HEIGHT, still.image.tobytes())
        painter.sync()
        wait_until(lambda: canvas_shows(viewer, still.image), timeout=15,
                   what=lambda: f"the calm picture, exactly; {viewer.evaluate(VIEWER_STATE)}")
    finally:
        painter.close()
    assert viewer.evaluate("window.remoteViewer.redraws") > redraws
    paint(display, PATTERN)  # as the module's other tests expect the screen
    wait_for_blocks(viewer, PATTERN[1:], tolerance=16)


ACK_WATCH = """() => {
  // Each VideoAck the page sends (Message field 11: tag 0x5a), with what it had drawn then.
  window.ackWatch = { acks: [], send: WebSocket.prototype.send };
  WebSocket.prototype.send = function (data) {
    const view = window.remoteViewer;
    if (data instanceof Uint8Array && data[0] === 0x5a) {
      window.ackWatch.acks.push([view.drawn, view.pictureCodec]);
    }
    return window.ackWatch.send.call(this, data);
  };
  return window.remoteViewer.drawn;
}"""


def test_a_frame_is_acknowledged_once_it_is_drawn(attended: Attended, display: Xvfb) -> None:
    """CONTRACT "Acks": a viewer acknowledges a frame it has shown. A video frame reaches
    the canvas when the browser's decoder gives it back, after the message is handled;
    acknowledged then, the agent's flow window bounds what waits in the page's decoder
    too, and a page that falls behind gets fewer, newer frames rather than a queue."""
    viewer = attended.viewer
    painter = Painter(display.display)
    drawn = viewer.evaluate(ACK_WATCH)
    try:
        movie = [painter.upload(video_like(WIDTH, HEIGHT, t)) for t in range(4)]
        for step in range(60):  # two seconds of motion: the stream goes to video
            painter.blit(movie[step % len(movie)], 0, 0, WIDTH, HEIGHT)
            painter.sync()
            time.sleep(1 / 30)
        acks = viewer.evaluate("window.ackWatch.acks")
    finally:
        viewer.evaluate("() => { WebSocket.prototype.send = window.ackWatch.send; }")
        painter.close()
    assert any(codec in CODECS.keys() - {"raw"} for _, codec in acks), acks
    for index, (drawn_then, _) in enumerate(acks):  # every frame acknowledged was drawn
        assert drawn_then - drawn >= index + 1, (index, drawn, acks)
    paint(display, PATTERN)  # as the module's other tests expect the screen
    wait_for_blocks(viewer, PATTERN[1:], tolerance=16)


def test_a_dropped_socket_reconnects_and_draws_again(attended: Attended, display: Xvfb) -> None:
    viewer = attended.viewer
    drawn = viewer.evaluate("window.remoteViewer.drawn")
    viewer.evaluate("window.remoteViewer.ws.close(4000, 'network dropped')")
    viewer.wait_for_selector("#state[data-state=reconnecting]", timeout=10_000)
    viewer.wait_for_selector("#state[data-state=connected]", timeout=30_000)
    paint(display, [(*MARK, 0x808000)])
    wait_until(lambda: viewer.evaluate("window.remoteViewer.drawn") > drawn, what="a new frame")
    wait_for_blocks(viewer, [(*MARK, 0x808000)], tolerance=16)


def test_a_click_moves_the_remote_pointer(attended: Attended, display: Xvfb) -> None:
    click_remote(attended.viewer, 612, 437)
    assert pointer_reaches(display, (612, 437))
    attended.viewer.screenshot(path=str(DOCS / "viewer.png"))
    attended.page.click("nav >> text=Machines")
    attended.page.wait_for_selector("#machines tr[data-agent-id] >> text=online")
    attended.page.screenshot(path=str(DOCS / "console-machines.png"))


def watched_machine(admin: Api, tmp_path: Path, display: Xvfb, server: ServerProcess,
                    technician: str) -> tuple[AgentProcess, str]:
    """A view-only technician and a managed agent live on ``display``: the agent and its
    session's id."""
    created = admin.post("/api/users", json={
        "username": technician, "password": TECH_PASSWORD, "role": "technician",
        "permissions": ["view"], "client_access": ["*"]})
    assert created.status_code == 201, created.text
    agent_id, key = admin.machine_with_key()
    managed = AgentProcess(tmp_path / "managed", display.display, "--server", server.url,
                           "--key", key)
    return managed, admin.live_session(agent_id)["id"]


def test_a_view_only_technician_cannot_move_the_pointer(
        tmp_path: Path, attended: Attended, display: Xvfb, server: ServerProcess,
        admin: Api, browser: Any) -> None:
    """On a managed machine (an attended session admits only the technician the end user
    consented to), a technician with only ``view`` watches and cannot move the pointer."""
    managed, session_id = watched_machine(admin, tmp_path, display, server, "viewer-tech")
    try:
        with watched_context(browser, viewport=VIEWPORT) as context:
            page = context.new_page()
            log_in(page, server.url, "viewer-tech", TECH_PASSWORD)
            page.goto(f"{server.url}/console/viewer.html?session={session_id}")
            page.wait_for_selector("#state[data-state=connected] >> text=view only")
            wait_for_blocks(page, PATTERN[1:3], tolerance=16)
            before = pointer(display)
            # Even a tampered page that sends input is refused by the server.
            page.evaluate("window.remoteViewer.viewOnly = false")
            click_remote(page, 150, 150)
            page.mouse.move(10, 10)
            page.wait_for_timeout(1000)
            assert pointer(display) == before
    finally:
        managed.stop()


REFUSED_FRAME = """async () => {
  // A screen of its own (the player's class), two H.264 frames from this browser's encoder.
  const Screen = window.remotePlayer.screen.constructor;
  const screen = new Screen(document.createElement("canvas"),
    { names: ["h264"], plugins: new Map() });
  const [width, height] = [320, 240];
  const chunks = [];
  const encoder = new VideoEncoder({ output: (chunk) => chunks.push(chunk),
    error: (error) => { throw error; } });
  encoder.configure({ codec: "avc1.42001f", width, height, avc: { format: "annexb" } });
  for (let i = 0; i < 2; i++) {
    const picture = new VideoFrame(new Uint8Array(width * height * 3 / 2).fill(40 + i * 80),
      { format: "I420", codedWidth: width, codedHeight: height, timestamp: i * 33333 });
    encoder.encode(picture, { keyFrame: i === 0 });
    picture.close();
  }
  await encoder.flush();
  const message = (chunk, pts) => {
    const data = new Uint8Array(chunk.byteLength);
    chunk.copyTo(data);
    return { encoding: { case: "h264", value: { data, keyframe: chunk.type === "key",
      pts: BigInt(pts), width: 0, height: 0 } } };
  };
  const acks = [];
  screen.frame(message(chunks[0], 1), () => acks.push(["first", screen.drawn]));
  const decode = VideoDecoder.prototype.decode;
  VideoDecoder.prototype.decode = () => { throw new DOMException("refused", "DataError"); };
  try {
    screen.frame(message(chunks[1], 2), () => acks.push(["second", screen.drawn]));
  } finally {
    VideoDecoder.prototype.decode = decode;
  }
  const atOnce = acks.slice();
  await screen.settle();
  return { atOnce, acks };
}"""


@pytest.fixture(scope="module")
def lone_player(server: ServerProcess, browser: Any) -> Iterator[Any]:
    """The recordings player's page, with no recording: its Screen class, to draw frames
    a test makes (one login for the tests that use it: logins are rate-limited per IP)."""
    with watched_context(browser, allow=("404",)) as context:  # the recording, not found
        page = context.new_page()
        log_in(page, server.url, "admin", ADMIN_PASSWORD)
        page.goto(f"{server.url}/console/player.html?recording=no-such-recording")
        page.locator("#state[data-state='error']").wait_for()
        yield page


def test_a_frame_the_decoder_refuses_releases_its_own_ack_only(lone_player: Any) -> None:
    """A frame whose decode() throws is acknowledged as dropped at once; a frame still in
    the decoder before it is acknowledged only once drawn (CONTRACT "Acks")."""
    result = lone_player.evaluate(REFUSED_FRAME)
    assert result["atOnce"] == [["second", 0]], result
    assert result["acks"] == [["second", 0], ["first", 1]], result


def canvas_bgra(rgba: str, width: int, height: int) -> np.ndarray:
    """A canvas's pixels as the page gave them (base64 RGBA) in the screen's BGRA order."""
    pixels = np.frombuffer(base64.b64decode(rgba), np.uint8).reshape(height, width, 4)
    return np.concatenate([pixels[..., 2::-1], pixels[..., 3:]], axis=2)


RAW_FRAMES = """async ([frames, width, height]) => {
  // A screen of its own (the player's class) drawing raw frames given in base64.
  const Screen = window.remotePlayer.screen.constructor;
  const canvas = document.createElement("canvas");
  const screen = new Screen(canvas, { names: ["raw"], plugins: new Map() });
  const bytes = (text, at) => { // at an offset of its buffer (a field inside a message)
    const raw = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
    const buffer = new Uint8Array(raw.length + at);
    buffer.set(raw, at);
    return buffer.subarray(at);
  };
  const drawn = [];
  for (const { data, at, compressed, key, rects, rows, copies, repeat, sequence } of frames) {
    screen.frame({ sequence: sequence || 0, encoding: { case: "raw", value: { width, height,
      compressed, data: bytes(data, at), isKeyframe: key, rows: rows || 0, repeat: !!repeat,
      copies: (copies || []).map(([x, y, w, h, srcX, srcY]) => (
        { x, y, width: w, height: h, srcX, srcY })),
      dirtyRects: rects.map(([x, y, w, h]) => ({ x, y, width: w, height: h })) } } });
    await screen.settle();
    drawn.push(screen.drawn);
  }
  const rgba = canvas.getContext("2d").getImageData(0, 0, width, height).data;
  let text = "";
  for (let i = 0; i < rgba.length; i += 0x8000) {
    text += String.fromCharCode.apply(null, rgba.subarray(i, i + 0x8000));
  }
  return { drawn, zstd: screen.zstd, kept: screen.kept, repeats: screen.repeats,
    rgba: btoa(text) };
}"""


def test_raw_frames_decode_exactly_and_a_wrong_one_is_dropped(lone_player: Any) -> None:
    """Raw frames (CONTRACT "Raw frames") through the page's WebAssembly zstd decoder, under
    the shipped CSP, pixel for pixel: a keyframe, a compressed change, and an uncompressed
    one at an odd offset of its message. A frame that decompresses to other than its
    rectangles' size is dropped (a warning, no error) and the next is drawn."""
    width, height = 64, 48
    rng = np.random.default_rng(5)
    image = rng.integers(0, 256, (height, width, 4), np.uint8)
    image[..., 3] = 255
    zstd = zstandard.ZstdCompressor()
    frames = [{"data": zstd.compress(image.tobytes()), "at": 0, "compressed": True,
               "key": True, "rects": []}]
    for at, compressed, (x, y, w, h) in ((0, True, (8, 8, 16, 8)), (1, False, (30, 20, 9, 5)),
                                         (0, True, (0, 40, 64, 8))):
        image[y:y + h, x:x + w, :3] = rng.integers(0, 256, (h, w, 3), np.uint8)
        pixels = image[y:y + h, x:x + w].tobytes()
        frames.append({"data": zstd.compress(pixels) if compressed else pixels, "at": at,
                       "compressed": compressed, "key": False, "rects": [[x, y, w, h]]})
    shown = image.copy()
    frames.insert(3, {"data": zstd.compress(bytes(4 * 7)), "at": 0, "compressed": True,
                      "key": False, "rects": [[0, 0, 2, 4]]})  # 7 pixels, not 8
    for frame in frames:
        frame["data"] = base64.b64encode(frame["data"]).decode()
    wait_until(lambda: lone_player.evaluate("window.remotePlayer.screen.zstd") == "wasm",
               what="the WebAssembly zstd decoder, under the console's CSP")
    result = lone_player.evaluate(RAW_FRAMES, [frames, width, height])
    assert result["zstd"] == "wasm"
    assert result["drawn"] == [1, 2, 3, 3, 4], result["drawn"]
    bgra = canvas_bgra(result["rgba"], width, height)
    assert (bgra[..., :3] == shown[..., :3]).all() and (bgra[..., 3] == 255).all()


def raw_wire(frame: Any, sequence: int = 0) -> dict[str, Any]:
    """An ``EncodedFrame`` of raw_zstd as :data:`RAW_FRAMES` takes it (``VideoFrame.sequence``:
    0, as if each came after a gap)."""
    return {"data": base64.b64encode(frame.data).decode(), "at": 0, "rows": frame.rows,
            "repeat": frame.repeat, "sequence": sequence,
            "compressed": frame.compressed, "key": frame.keyframe,
            "rects": [[r.x, r.y, r.width, r.height] for r in frame.rects],
            "copies": [[c.x, c.y, c.width, c.height, c.src_x, c.src_y] for c in frame.copies]}


def keeping_encoder(width: int, height: int, *extensions: str) -> Any:
    """raw_zstd's encoder for a page that keeps its picture below a keyframe part
    (raw_keep), and lists ``extensions`` too."""
    from remote_codec_raw_zstd.encoder import RawZstdEncoder
    from remote_codec_raw_zstd.extensions import KEEP_EXTENSION

    from remote_core.codecs import encoder_config

    listed = frozenset({KEEP_EXTENSION, *extensions})
    return RawZstdEncoder(dataclasses.replace(encoder_config(width, height), extensions=listed))


def test_a_keyframe_part_is_drawn_over_the_picture_shown(lone_player: Any) -> None:
    """The keyframe due every 10 s, in parts over a slow link (raw_keep, which the page
    lists): the page keeps its picture below the part's rows, and the parts after it
    bring it to the screen exactly; a page that starts at the part shows the placeholder
    there until they come, and ends exact too."""
    from remote_codec_raw_zstd.parts import PLACEHOLDER

    width, height = 320, 240
    desktop = Desktop(width, height, seed=17)
    encoder = keeping_encoder(width, height)
    frames = [encoder.encode(desktop.image, keyframe=True)]
    before = desktop.image.copy()
    desktop.type(60, (width, height))  # typing all down the page
    assert encoder.keyframe_in_parts(4096)
    frames.append(encoder.encode(desktop.image, keyframe=True))
    while encoder.pending:
        frames.append(encoder.encode(desktop.image))
    rows = frames[1].rows
    assert 0 < rows < height and len(frames) > 3

    def bgra(result: dict[str, Any]) -> np.ndarray:
        return canvas_bgra(result["rgba"], width, height)

    kept = lone_player.evaluate(RAW_FRAMES, [[raw_wire(f) for f in frames[:2]], width, height])
    assert kept["kept"] == 1
    assert np.array_equal(bgra(kept)[:rows], desktop.image[:rows])
    assert np.array_equal(bgra(kept)[rows:], before[rows:])
    late = lone_player.evaluate(RAW_FRAMES, [[raw_wire(f) for f in frames[1:2]], width, height])
    assert late["kept"] == 0 and bgra(late)[rows:].tobytes() == PLACEHOLDER * (
        (height - rows) * width)
    for start in (0, 1):
        result = lone_player.evaluate(RAW_FRAMES, [[raw_wire(f) for f in frames[start:]], width,
                                                   height])
        assert result["drawn"][-1] == len(frames) - start
        assert np.array_equal(bgra(result), desktop.image)


def test_a_keyframe_repeating_the_picture_is_skipped_only_by_a_page_in_step(
        lone_player: Any) -> None:
    """The keyframe due every 10 s, made of the picture the page has (``RawFrame.repeat``):
    a page that drew every frame since a keyframe, in order, skips it; a page that starts
    at it, or missed a frame before it, draws it. Each ends with the screen."""
    from remote_codec_raw_zstd.encoder import RawZstdEncoder

    from remote_core.codecs import encoder_config

    width, height = 320, 240
    desktop = Desktop(width, height, seed=19)
    encoder = RawZstdEncoder(encoder_config(width, height))
    frames = [encoder.encode(desktop.image, keyframe=True)]
    desktop.type(8, (width, height))
    frames.append(encoder.encode(desktop.image))
    frames.append(encoder.repeat_keyframe())
    assert frames[-1].keyframe and frames[-1].repeat
    desktop.type(8, (width, height))
    frames.append(encoder.encode(desktop.image))
    wired = [raw_wire(f, sequence) for sequence, f in enumerate(frames, 7)]
    for given, repeats, drawn in ((wired, 1, [1, 2, 2, 3]), (wired[2:], 0, [1, 2]),
                                  ([wired[0], *wired[2:]], 0, [1, 2, 3])):
        result = lone_player.evaluate(RAW_FRAMES, [given, width, height])
        assert (result["repeats"], result["drawn"]) == (repeats, drawn), result
        assert np.array_equal(canvas_bgra(result["rgba"], width, height), desktop.image)


def test_a_page_scrolled_through_a_keyframe_in_parts_ends_exact(lone_player: Any) -> None:
    """A page scrolling while the keyframe due is swept down in parts: its scrolls come as
    moves of what the page shows (raw_copy), bringing rows up from below the sweep to
    above it. A page in step shows the screen after each; once the sweep ends, so does
    a page that started at the part."""
    from remote_codec_raw_zstd.extensions import COPY_EXTENSION

    from remote_core.types import Rect

    width, height = 320, 240
    desktop = Desktop(width, height, seed=18)
    encoder = keeping_encoder(width, height, COPY_EXTENSION)
    frames = [encoder.encode(desktop.image, keyframe=True)]
    assert encoder.keyframe_in_parts(2048)
    frames.append(encoder.encode(desktop.image, keyframe=True))
    assert 0 < frames[1].rows < height
    left, top, right, _ = desktop.page
    while encoder.redrawn * height < top + 40:  # the sweep inside the page
        frames.append(encoder.encode(desktop.image))
    for _ in range(6):
        before = desktop.image.copy()
        desktop.scroll()
        rows = np.flatnonzero((before != desktop.image).any(axis=(1, 2)))
        dirty = [Rect(left, int(rows[0]), right - left, int(rows[-1] + 1 - rows[0]))]
        frames.append(encoder.encode(desktop.image, dirty=dirty,
                                     moves=encoder.find_moves(desktop.image, dirty)))
    scrolled = len(frames)  # a page in step shows the screen at once
    in_step = lone_player.evaluate(RAW_FRAMES, [[raw_wire(f) for f in frames], width, height])
    assert np.array_equal(canvas_bgra(in_step["rgba"], width, height), desktop.image)
    while encoder.pending:
        frames.append(encoder.encode(desktop.image))
    assert sum(bool(f.copies) for f in frames) == 6 and len(frames) > scrolled
    for start in (0, 1):
        result = lone_player.evaluate(RAW_FRAMES, [[raw_wire(f) for f in frames[start:]], width,
                                                   height])
        assert result["drawn"][-1] == len(frames) - start
        assert np.array_equal(canvas_bgra(result["rgba"], width, height), desktop.image)


def test_agent_reported_text_is_shown_as_text(server: ServerProcess, admin: Api,
                                              browser: Any) -> None:
    markup = '<img src=x onerror="window.pwned=1"><b>bold</b>'
    created = admin.post("/api/machines", json={"organization": markup, "site": "",
                                                "tags": ["<i>t</i>"]})
    assert created.status_code == 201, created.text
    with watched_context(browser) as context:
        page = context.new_page()
        log_in(page, server.url, "admin", ADMIN_PASSWORD)
        row = page.wait_for_selector(f"tr[data-agent-id='{created.json()['agent_id']}']")
        # The DOM holds the text, and no element was made of it.
        assert markup in row.inner_text()
        assert row.query_selector("img") is None and row.query_selector("b") is None
        assert row.query_selector("i") is None
        assert page.evaluate("window.pwned") is None


def test_a_clean_page_load_reports_nothing(server: ServerProcess, browser: Any) -> None:
    """The login page and an empty viewer load with no error at all (the icon included)."""
    with watched_context(browser) as context:
        page = context.new_page()
        failed: list[str] = []
        page.on("requestfailed",
                lambda request: failed.append(f"{request.url} ({request.failure})"))
        page.on("response",
                lambda r: failed.append(f"{r.url} ({r.status})") if r.status >= 400 else None)
        page.goto(f"{server.url}/console/")
        page.wait_for_selector("input[name=username]")
        # the icon is fetched after the load: leaving sooner would abort it (a failure)
        page.wait_for_load_state("networkidle")
        page.goto(f"{server.url}/console/viewer.html")
        page.wait_for_selector("#state[data-state=ended]")
        page.wait_for_load_state("networkidle")
        assert failed == []
    icon = httpx.get(f"{server.url}/console/favicon.svg", timeout=10)
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")


def test_console_is_served_with_a_strict_content_security_policy(server: ServerProcess) -> None:
    home = httpx.get(f"{server.url}/", timeout=10)
    assert home.status_code == 307 and home.headers["location"] == "/console/"
    for page in ("", "viewer.html", "viewer.js"):
        response = httpx.get(f"{server.url}/console/{page}", timeout=10)
        assert response.status_code == 200
        directives = {d.split()[0]: d.split()[1:]
                      for d in response.headers["content-security-policy"].split("; ")}
        # no 'unsafe-eval', no 'unsafe-inline': WebAssembly (the zstd decoder) only
        assert directives["script-src"] == ["'self'", "'wasm-unsafe-eval'"]
        assert directives["object-src"] == ["'none'"] and directives["base-uri"] == ["'none'"]
        assert directives["frame-ancestors"] == ["'none'"]
        assert directives["form-action"] == ["'self'"]
        assert directives["require-trusted-types-for"] == ["'script'"]
        assert directives["report-uri"] == ["/api/csp-report"]
        policy = response.headers["content-security-policy"]
        assert "unsafe" not in policy.replace("'wasm-unsafe-eval'", "", 1)


def test_a_violation_in_the_console_reaches_the_server_log(server: ServerProcess,
                                                           browser: Any) -> None:
    """What a broken proxy or extension does to the page lands in the operator's log."""
    with watched_context(browser, allow=("img-src",)) as context:
        page = context.new_page()
        page.goto(f"{server.url}/console/")
        page.wait_for_selector("input[name=username]")
        # An image from another origin, as injected markup would load it: refused.
        page.evaluate("""() => { const img = document.createElement("img");
            img.src = "https://elsewhere.invalid/pixel.png"; document.body.append(img); }""")
        wait_until(lambda: "csp violation" in server.log.read_text(errors="replace"),
                   timeout=20, what="the violation in the server's log")
    line = next(line for line in server.log.read_text().splitlines() if "csp violation" in line)
    assert "img-src" in line and "elsewhere.invalid" in line and "/console/" in line


def test_every_view_renders_and_admin_forms_work(server: ServerProcess, browser: Any) -> None:
    with watched_context(browser) as context:
        page = context.new_page()
        log_in(page, server.url, "admin", ADMIN_PASSWORD)
        for title in ("Machines", "Support codes", "Sessions", "Releases", "Users", "Tenants",
                      "Audit log", "Webhooks"):
            page.click(f"nav >> text={title}")
            page.wait_for_selector(f"main h1:has-text('{title.split()[0]}')")
        # Releases: the form creates one, the table shows it.
        page.click("nav >> text=Releases")
        page.fill("input[name=version]", "9.8.7")
        page.fill("input[name=download_url]", "https://updates.example/agent-9.8.7.pyz")
        page.fill("input[name=checksum_sha256]", "ab" * 32)
        page.click("form >> text=Add release")
        page.wait_for_selector("td:text-is('9.8.7')")
        # Users: the form creates a technician, who then has a row.
        page.click("nav >> text=Users")
        page.fill("input[name=username]", "new-tech")
        page.fill("input[name=password]", "new-tech-password")
        page.click("form >> text=Add user")
        page.wait_for_selector("td:text-is('new-tech')")
        # an administrator lifts an account's guard (here none was up); audited
        page.click("tr:has(td:text-is('new-tech')) >> button.unlock")
        page.wait_for_selector("main .said >> text=new-tech was not locked")
        page.click("nav >> text=Audit log")
        page.wait_for_selector("td:text-is('release.created')")
        page.wait_for_selector("td:text-is('auth.account_unlocked')")
        assert [e.inner_text() for e in page.query_selector_all("main .error")] == [""]


def test_a_refused_origin_is_said_plainly_not_retried_forever(
        tmp_path: Path, display: Xvfb, browser: Any) -> None:
    """A console served from an origin the server does not list: the viewer's socket is
    refused (403, which a browser reads as 1006), and the page says why and stops."""
    server = ServerProcess(tmp_path / "server", public_origins="https://console.example").start()
    api = Api(server)
    agent = None
    try:
        agent_id, key = api.machine_with_key()
        agent = AgentProcess(tmp_path / "agent", display.display, "--server", server.url,
                             "--key", key)
        session_id = api.live_session(agent_id)["id"]
        # The browser reports the refused upgrade itself; that one error is the point.
        with watched_context(browser, allow=("WebSocket connection to",)) as context:
            page = context.new_page()
            log_in(page, server.url, "admin", ADMIN_PASSWORD)
            page.goto(f"{server.url}/console/viewer.html?session={session_id}")
            state = page.wait_for_selector("#state[data-state=refused]", timeout=30_000)
            text = state.inner_text()
            assert "Refused by the server (origin" in text and server.url in text
            assert "REMOTE_SUPPORT_PUBLIC_ORIGINS" in text
            page.wait_for_timeout(3000)  # and it stays so: no reconnect loop
            assert page.evaluate("document.getElementById('state').dataset.state") == "refused"
    finally:
        if agent is not None:
            agent.stop()
        api.close()
        server.stop()


@pytest.mark.parametrize("action", ["logout", "password change"])
def test_logout_and_password_change_close_a_live_viewer(
        tmp_path: Path, display: Xvfb, server: ServerProcess, admin: Api, browser: Any,
        action: str) -> None:
    """The viewer socket of a technician who logs out, or changes their password, is
    closed by the server at once, and the viewer says why."""
    name = f"leaving-{action.split()[0]}"
    managed, session_id = watched_machine(admin, tmp_path, display, server, name)
    try:
        with watched_context(browser, viewport=VIEWPORT) as context:
            page = context.new_page()
            log_in(page, server.url, name, TECH_PASSWORD)
            page.goto(f"{server.url}/console/viewer.html?session={session_id}")
            page.wait_for_selector("#state[data-state=connected]", timeout=30_000)
            bearer = page.evaluate("sessionStorage.getItem('remote-support.token')")
            headers = {"Authorization": f"Bearer {bearer}"}
            if action == "logout":
                r = httpx.post(f"{server.url}/api/auth/logout", headers=headers)
                words = "logged out"
            else:
                r = httpx.post(f"{server.url}/api/auth/change-password", headers=headers, json={
                    "current_password": TECH_PASSWORD, "new_password": "a-new-password-0"})
                words = "password"
            assert r.status_code == 204, r.text
            state = page.wait_for_selector("#state[data-state=ended]", timeout=10_000)
            assert "access withdrawn" in state.text_content() and words in state.text_content()
    finally:
        managed.stop()


TEXT_WIDGET = """
import sys, tkinter
root = tkinter.Tk(className="typed-here")
root.title("typed-here")
root.geometry("400x60+200+270")
text = tkinter.StringVar()
text.trace_add("write", lambda *_: open(sys.argv[1], "w", encoding="utf-8").write(text.get()))
entry = tkinter.Entry(root, textvariable=text)
entry.pack(fill="both", expand=True)
entry.focus_set()
root.mainloop()
"""
"""A real X text widget on the agent's desktop that writes what it holds to a file."""


def cdp_key(session: Any, code: str, key: str, down: bool, text: str = "") -> None:
    """A key as another keyboard layout makes it: the physical ``code`` and the ``key``
    (the character) of that layout, which Chromium's own keyboard cannot produce."""
    session.send("Input.dispatchKeyEvent", {
        "type": ("keyDown" if text else "rawKeyDown") if down else "keyUp",
        "code": code, "key": key, "text": text if down else "",
        "unmodifiedText": text if down else ""})


@pytest.mark.parametrize("remote", ["de", "fr"])
def test_typed_characters_arrive_whatever_the_two_layouts(
        attended: Attended, display: Xvfb, tmp_path: Path, remote: str) -> None:
    """A US, a German and a French technician type @ / ü é € on a German and on a French
    desktop: the text widget on the agent receives exactly those characters. By
    position ("Physical keys") the same US keys would type other characters there."""
    viewer = attended.viewer
    typed = tmp_path / "typed.txt"
    widget = subprocess.Popen([sys.executable, "-c", TEXT_WIDGET, str(typed)],
                              env=display.env())
    try:
        subprocess.run(["setxkbmap", remote], env=display.env(), check=True, timeout=10)
        found = subprocess.run(["xdotool", "search", "--sync", "--onlyvisible", "--name",
                                "typed-here"], env=display.env(), check=True,
                               capture_output=True, text=True, timeout=30)
        window = found.stdout.split()[0]
        subprocess.run(["xdotool", "windowfocus", "--sync", window], env=display.env(),
                       check=True, timeout=10)
        viewer.focus("#screen")
        session = viewer.context.new_cdp_session(viewer)
        # US: @ is Shift+2, / has a key of its own (a German / is Shift+7, @ is AltGr+Q)
        viewer.keyboard.press("Shift+Digit2")
        viewer.keyboard.press("Slash")
        # German: ü has a key ([ on US); € is AltGr+E
        cdp_key(session, "BracketLeft", "ü", True, "ü")
        cdp_key(session, "BracketLeft", "ü", False)
        cdp_key(session, "AltRight", "AltGraph", True)
        cdp_key(session, "KeyE", "€", True, "€")
        cdp_key(session, "KeyE", "€", False)
        cdp_key(session, "AltRight", "AltGraph", False)
        # French: é is the key of the 2; then a dead key: ^ and e make ê
        cdp_key(session, "Digit2", "é", True, "é")
        cdp_key(session, "Digit2", "é", False)
        cdp_key(session, "BracketLeft", "Dead", True)
        cdp_key(session, "BracketLeft", "Dead", False)
        cdp_key(session, "KeyE", "ê", True, "ê")
        cdp_key(session, "KeyE", "ê", False)
        wanted = "@/ü€éê"
        wait_until(lambda: typed.is_file() and typed.read_text("utf-8") == wanted,
                   what=lambda: f"{wanted!r} in the widget; it holds "
                                f"{typed.read_text('utf-8') if typed.is_file() else ''!r}")
        # by position: the US technician's Shift+2 and / are other keys on this desktop
        viewer.check("#physical-keys")
        viewer.focus("#screen")
        viewer.keyboard.press("Shift+Digit2")
        viewer.keyboard.press("Slash")
        by_position = {"de": '"-', "fr": "2!"}[remote]
        wait_until(lambda: typed.read_text("utf-8") == wanted + by_position,
                   what=lambda: f"{wanted + by_position!r}; it holds "
                                f"{typed.read_text('utf-8')!r}")
    finally:
        viewer.uncheck("#physical-keys")
        stop_process(widget)
        subprocess.run(["setxkbmap", "us"], env=display.env(), check=True, timeout=10)


READ_CLIPBOARD = """
import tkinter
root = tkinter.Tk()
root.withdraw()
try:
    print(root.clipboard_get(), end="")
except tkinter.TclError:
    pass
"""


def remote_clipboard(display: Xvfb) -> str:
    return subprocess.run([sys.executable, "-c", READ_CLIPBOARD], env=display.env(),
                          capture_output=True, text=True, timeout=30).stdout


def test_the_clipboard_goes_across_when_the_viewer_gains_the_focus(
        attended: Attended, display: Xvfb, server: ServerProcess) -> None:
    """The technician copies, comes back to the viewer: the remote clipboard has it. Too
    much text is refused in the page with a notice, and the remote keeps what it had."""
    viewer = attended.viewer
    viewer.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    viewer.evaluate("navigator.clipboard.writeText('copied by the technician ✓')")
    viewer.evaluate("window.dispatchEvent(new Event('focus'))")
    wait_until(lambda: remote_clipboard(display) == "copied by the technician ✓",
               what=lambda: f"the remote clipboard; it holds {remote_clipboard(display)!r}")
    viewer.evaluate("navigator.clipboard.writeText('z'.repeat(2 * 1024 * 1024))")
    viewer.evaluate("window.dispatchEvent(new Event('focus'))")
    viewer.wait_for_selector("#notice >> text=Clipboard not sent: 2.0 MB of text")
    assert remote_clipboard(display) == "copied by the technician ✓"


def test_the_last_codec_draws_the_remote_screen_too(attended: Attended, display: Xvfb) -> None:
    draws(attended, display, LAST)


ENCODED_FRAMES = """async ([codec, frames]) => {
  // A screen of its own (the player's class) drawing a codec's frames given in base64,
  // each with the display's size it states beside the bitstream (0: none); what the canvas
  // shows before each keyframe but the first, and at the end, as base64 RGBA (settling
  // flushes the decoder, which then wants a keyframe).
  const Screen = window.remotePlayer.screen.constructor;
  const canvas = document.createElement("canvas");
  const screen = new Screen(canvas, { names: [codec], plugins: new Map() });
  const shown = [];
  const look = async () => {
    await screen.settle();
    const rgba = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
    let text = "";
    for (let i = 0; i < rgba.length; i += 0x8000) {
      text += String.fromCharCode.apply(null, rgba.subarray(i, i + 0x8000));
    }
    shown.push({ width: canvas.width, height: canvas.height, rgba: btoa(text) });
  };
  for (const [index, { data, key, width, height }] of frames.entries()) {
    if (key && index > 0) await look();
    screen.frame({ encoding: { case: codec, value: { keyframe: key, pts: BigInt(index),
      data: Uint8Array.from(atob(data), (c) => c.charCodeAt(0)), width, height } } });
  }
  await look();
  return { shown, drawn: screen.drawn, scaled: screen.scaled };
}"""


def _encoded(frame: Any) -> dict[str, Any]:
    """An ``EncodedFrame`` as :data:`ENCODED_FRAMES` takes it."""
    return {"data": base64.b64encode(frame.data).decode(), "key": frame.keyframe,
            "width": frame.width, "height": frame.height}


@pytest.mark.parametrize("codec", ["h264", "vp9"])
def test_a_downscaled_stream_is_drawn_at_the_displays_size(lone_player: Any,
                                                            codec: str) -> None:
    """An agent short of CPU codes motion at half size for a page that lists the codec's
    ``_scaled`` extension (it does, beside h264 and vp9); the page scales it up to the
    size the keyframe states (H.264's in its SEI, VP9's beside the bitstream), and crops
    an odd display's padding off a full-size H.264 picture."""
    from remote_core.codecs import encoder_config
    from remote_core.testing.codec_contract import psnr

    plugin = importlib.import_module(f"remote_codec_{codec}")
    width, height = 321, 241  # odd: H.264 codes 322x242, and 162x122 at half size
    desktop = Desktop(width, height, seed=9)
    config = encoder_config(width, height)
    encoder = plugin.SPEC.encoder_factory(
        dataclasses.replace(config, extensions=frozenset({plugin.SCALED})))
    pictures, frames = [], []
    for step in range(4):
        if step == 1:
            assert encoder.downscale(2)
        desktop.type(3)
        frame = encoder.encode(desktop.image)
        pictures.append(desktop.image.copy())
        frames.append(_encoded(frame))
    assert [f["key"] for f in frames] == [True, True, False, False]
    assert [f["width"] for f in frames] == [0, width if codec == "vp9" else 0, 0, 0]
    result = lone_player.evaluate(ENCODED_FRAMES, [codec, frames])
    assert result["drawn"] == 4 and result["scaled"] == 3
    # The full-size picture; the last one, downscaled and drawn back up.
    for shown, picture, least in zip(result["shown"], (pictures[0], pictures[-1]), (30, 20),
                                     strict=True):
        assert (shown["width"], shown["height"]) == (width, height)
        assert psnr(canvas_bgra(shown["rgba"], width, height), picture) > least


def test_a_stated_size_far_over_the_picture_is_not_believed(lone_player: Any) -> None:
    """A keyframe whose size SEI states more than four times its coded side (a forged
    one) is drawn at its coded size: the page never makes a canvas that large."""
    from remote_codec_h264.codec import H264Encoder
    from remote_codec_pyav.annexb import H264_SEI_HEADER, size_sei

    from remote_core.codecs import encoder_config

    frame = H264Encoder(encoder_config(320, 240)).encode(Desktop(320, 240).image)
    forged = size_sei(H264_SEI_HEADER, 1281, 961) + frame.data
    result = lone_player.evaluate(ENCODED_FRAMES, [
        "h264", [_encoded(dataclasses.replace(frame, data=forged))]])
    assert result["drawn"] == 1 and result["scaled"] == 0
    assert [(s["width"], s["height"]) for s in result["shown"]] == [(320, 240)]

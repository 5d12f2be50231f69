"""A managed agent under Xvfb, a real server process and a Python viewer, end to end."""

# Polling the X server for the pointer is the point of these tests:
# ruff: noqa: ASYNC110

from __future__ import annotations

import subprocess
import time

import anyio
import numpy as np
import pytest
from remote_agent.flow import MOST_IN_FLIGHT
from remote_server.testing.processes import AgentProcess
from remote_viewer.client import open_viewer

from remote_core.protocol import MAX_CLIPBOARD_BYTES, pb
from remote_core.testing.codec_contract import Desktop
from remote_core.testing.xvfb import blank_painter, pointer_location, scroll_page, tk_root

pytestmark = [pytest.mark.xvfb, pytest.mark.slow]


@pytest.fixture
def painter(x_display):
    with blank_painter(x_display.display) as p:
        yield p


@pytest.fixture
def managed(tmp_path, x_display, server, api):
    agent_id, key = api.machine_with_key(organization="Acme")
    agent = AgentProcess(tmp_path / "agent", x_display.display, "--server", server.url,
                         "--key", key)
    try:
        session = api.live_session(agent_id)
        yield agent_id, session, agent
    finally:
        agent.stop()


@pytest.mark.anyio
async def test_pattern_arrives_pixel_exact_through_raw_zstd(managed, painter, api, server):
    _, session, _ = managed
    pattern = np.random.default_rng(7).integers(0, 256, (64, 96, 4), dtype=np.uint8)
    async with open_viewer(server.url, api.viewer_token(session["id"]),
                           codec=pb.CODEC_RAW) as viewer:
        first = await viewer.next_frame(15)
        while first.codec != "raw":  # frames before our codec choice reached the agent
            first = await viewer.next_frame(15, after=first.sequence)
        assert first.image.shape == (600, 800, 4)
        painter.put_bgra(100, 200, 96, 64, pattern.tobytes())
        painter.sync()
        frame = await viewer.wait_for_image(
            lambda image: np.array_equal(image[200:264, 100:196, :3], pattern[:, :, :3]), 10)
        assert frame.display_id == 1 and frame.sequence > first.sequence
        assert not frame.keyframe  # only the change travelled
        assert frame.size < 64 * 96 * 4 + 1024
        assert (frame.image[:200, :, :3] == 0).all()


@pytest.mark.anyio
async def test_the_automatic_codec_follows_the_content(managed, painter, api, server):
    """Left to the agent: small changes lossless, a moving screen in H.264, and lossless
    again (exact) once the screen is calm."""
    _, session, _ = managed
    rng = np.random.default_rng(11)
    async with open_viewer(server.url, api.viewer_token(session["id"])) as viewer:
        frame = await viewer.next_frame(15)
        assert frame.codec == "raw"
        desktop = Desktop(800, 600, seed=12).image  # a large lossless frame: the link's rate
        painter.put_bgra(0, 0, 800, 600, desktop.tobytes())
        painter.sync()
        await viewer.wait_for_image(lambda image: np.array_equal(image, desktop), 10)
        typed = rng.integers(0, 256, (20, 100, 4), dtype=np.uint8)
        painter.put_bgra(50, 50, 100, 20, typed.tobytes())
        painter.sync()
        frame = await viewer.wait_for_image(
            lambda image: np.array_equal(image[50:70, 50:150, :3], typed[:, :, :3]), 10)
        assert frame.codec == "raw" and not frame.keyframe
        # Whole pictures of noise, each drawn in one request (CopyArea), as a video plays.
        movie = [painter.upload(rng.integers(0, 256, (600, 800, 4), dtype=np.uint8))
                 for _ in range(4)]
        before = viewer.bytes_received
        with anyio.fail_after(15):  # the screen moves, 30 times a second
            step = 0
            while frame.codec != "h264":
                painter.blit(movie[step % len(movie)], 0, 0, 800, 600)
                painter.sync()
                step += 1
                await anyio.sleep(1 / 30)
                frame = viewer.latest or frame
        assert frame.keyframe or frame.codec == "h264"
        # Not even the motion's first frame went lossless (1.9 MB of noise, however fast
        # the link: the viewer decodes it too).
        assert viewer.bytes_received - before < 1_000_000
        still = rng.integers(0, 256, (600, 800, 4), dtype=np.uint8)
        painter.put_bgra(0, 0, 800, 600, still.tobytes())
        painter.sync()
        calm = await viewer.wait_for_image(
            lambda image: np.array_equal(image[:, :, :3], still[:, :, :3]), 15)
        # The exact picture, restored over the video's (the viewer lists raw_over).
        assert calm.codec == "raw" and not calm.keyframe


@pytest.mark.anyio
async def test_a_first_picture_that_compresses_poorly_comes_back_exact(managed, painter,
                                                                       api, server):
    """A screen of noise when the viewer comes (1.9 MB lossless, over what a first picture
    may take before the link is known): the first picture is H.264, and once the screen
    is calm the exact one is drawn over it, measured for this link (loopback)."""
    _, session, _ = managed
    noise = np.random.default_rng(15).integers(0, 256, (600, 800, 4), dtype=np.uint8)
    painter.put_bgra(0, 0, 800, 600, noise.tobytes())
    painter.sync()
    async with open_viewer(server.url, api.viewer_token(session["id"])) as viewer:
        first = await viewer.next_frame(15)
        assert first.codec == "h264" and first.keyframe
        exact = await viewer.wait_for_image(
            lambda image: np.array_equal(image[:, :, :3], noise[:, :, :3]), 15)
        assert exact.codec == "raw" and not exact.keyframe


@pytest.mark.anyio
async def test_a_screen_drawn_again_unchanged_is_no_motion(managed, painter, api, server):
    """An application drawing its whole window again 30 times a second to blink a cursor:
    X reports the whole screen drawn each time, and the stream sends the cursor, lossless,
    rather than taking the screen for motion and going to video."""
    _, session, _ = managed
    desktop = Desktop(800, 600, seed=14).image
    painter.put_bgra(0, 0, 800, 600, desktop.tobytes())
    painter.sync()
    async with open_viewer(server.url, api.viewer_token(session["id"])) as viewer:
        await viewer.wait_for_image(lambda image: np.array_equal(image, desktop), 15)
        seen, before = viewer.frames_received, viewer.bytes_received
        codecs = set()
        blinked = desktop.copy()
        blinked[300:316, 200:202] = 255
        pictures = [blinked if step % 8 < 4 else desktop for step in range(45)]
        for picture in pictures:
            painter.put_bgra(0, 0, 800, 600, picture.tobytes())
            painter.sync()
            await anyio.sleep(1 / 30)
            if viewer.latest is not None and viewer.frames_received > seen:
                codecs.add(viewer.latest.codec)
        await viewer.wait_for_image(lambda image: np.array_equal(image, pictures[-1]), 10)
        assert codecs == {"raw"}
        # Eleven blinks of a band of rows, not 45 screens (a 800x600 desktop is some 60 KB).
        assert viewer.bytes_received - before < 150_000, viewer.bytes_received - before


@pytest.mark.anyio
async def test_a_scrolling_page_goes_as_moves_and_stays_lossless(managed, painter, api,
                                                                 server):
    """Left to the agent, a page scrolling 30 times a second (X CopyArea, then the new
    line drawn) is no motion: each scroll is a move of what the viewer shows plus the
    uncovered line, so the stream stays lossless, small, and exact."""
    _, session, _ = managed
    desktop = Desktop(800, 600, seed=13)
    painter.put_bgra(0, 0, 800, 600, desktop.image.tobytes())
    painter.sync()
    async with open_viewer(server.url, api.viewer_token(session["id"])) as viewer:
        await viewer.wait_for_image(lambda image: np.array_equal(image, desktop.image), 15)
        seen = viewer.frames_received
        codecs, moves, largest = set(), 0, 0
        for _ in range(45):
            scroll_page(painter, desktop)
            painter.sync()
            await anyio.sleep(1 / 30)
            frame = viewer.latest
            if frame is not None and viewer.frames_received > seen:
                codecs.add(frame.codec)
                moves += frame.moves
                largest = max(largest, 0 if frame.keyframe else frame.size)
        final = await viewer.wait_for_image(
            lambda image: np.array_equal(image, desktop.image), 10)
    assert codecs == {"raw"} and final.codec == "raw"
    assert moves >= 10, moves
    assert largest < 64 * 1024, largest  # a line and a move, not a page (about 200 KB)


@pytest.mark.anyio
async def test_mouse_event_moves_the_real_pointer(managed, api, server, x_display):
    _, session, _ = managed
    async with open_viewer(server.url, api.viewer_token(session["id"])) as viewer:
        await viewer.next_frame(15)
        await viewer.move(321, 123)
        with anyio.fail_after(5):
            while await pointer_location(x_display.env()) != (321, 123):
                await anyio.sleep(0.05)
        _, position = await viewer.receive("cursor_position", within=5)
        assert position.visible


@pytest.mark.anyio
async def test_each_viewer_is_told_the_pointer_as_it_joins_while_the_pointer_stays_still(
        managed, api, server, x_display):
    """The pointer is polled off the loop, which hears only of news; a viewer joining is
    news too: it gets the shape and the position it has not seen."""
    _, session, _ = managed
    token = api.viewer_token(session["id"])
    async with open_viewer(server.url, token) as first:
        await first.next_frame(15)
        _, shape = await first.receive("cursor_shape", within=5)
        _, position = await first.receive("cursor_position", within=5)
        async with open_viewer(server.url, api.viewer_token(session["id"])) as second:
            await second.next_frame(15)
            _, again = await second.receive("cursor_shape", within=5)
            _, there = await second.receive("cursor_position", within=5)
    assert (again.width, again.height, again.data) == (shape.width, shape.height, shape.data)
    assert (there.x, there.y, there.visible) == (position.x, position.y, True)


@pytest.fixture
def entry(x_display):
    """A real Tk window whose text entry has the keyboard focus."""
    import tkinter

    root = tk_root()
    root.geometry("300x80+400+400")
    widget = tkinter.Entry(root)
    widget.pack(fill="both", expand=True)
    for _ in range(20):
        root.update()
        time.sleep(0.01)
    subprocess.run(["xdotool", "windowfocus", "--sync", str(root.winfo_id())],
                   env=x_display.env(), check=False)
    widget.focus_force()
    root.update()
    yield widget
    root.destroy()


@pytest.mark.anyio
async def test_typed_keys_arrive_in_a_real_window(managed, api, server, entry):
    _, session, _ = managed
    async with open_viewer(server.url, api.viewer_token(session["id"])) as viewer:
        await viewer.next_frame(15)
        for vk in (0x48, 0x45, 0x4C, 0x4C, 0x4F):  # h e l l o
            await viewer.key(vk, True)
            await viewer.key(vk, False)
        with anyio.fail_after(5):
            while entry.get() != "hello":
                entry.update()
                await anyio.sleep(0.02)


@pytest.mark.anyio
async def test_view_only_viewer_cannot_move_the_pointer(managed, api, server, x_display):
    _, session, _ = managed
    await anyio.run_process(["xdotool", "mousemove", "--sync", "5", "5"], env=x_display.env())
    async with open_viewer(server.url, api.viewer_token(session["id"]),
                           view_only=True) as viewer:
        await viewer.next_frame(15)
        await viewer.move(300, 300)
        await anyio.sleep(0.5)
    assert await pointer_location(x_display.env()) == (5, 5)


async def _frames_to_a_viewer_that_never_acknowledges(server, api, session,
                                                      change) -> tuple[int, float]:
    """Frames a viewer that never acknowledges gets while ``change(i)`` changes the screen
    40 times in about a second (a 30 fps agent), and the seconds that took."""
    async with open_viewer(server.url, api.viewer_token(session["id"]), codec=pb.CODEC_RAW,
                           ack=False) as viewer:
        await viewer.next_frame(15)
        start, began = viewer.frames_received, time.monotonic()
        for i in range(40):
            change(i)
            await anyio.sleep(0.025)
        return viewer.frames_received - start, time.monotonic() - began


@pytest.mark.anyio
async def test_slow_viewer_lowers_the_frame_rate_instead_of_queueing(managed, api, server,
                                                                     painter):
    """Large frames: at most the flow window's three per stall (1 s) instead of ~30."""
    _, session, _ = managed
    noise = np.random.default_rng(7)

    def change(i: int) -> None:  # 400x400 of noise: 640 kB a frame, Zstandard or not
        painter.put_bgra(0, 0, 400, 400, noise.integers(0, 255, 400 * 400 * 4, np.uint8)
                         .tobytes())
        painter.sync()

    delivered, _ = await _frames_to_a_viewer_that_never_acknowledges(server, api, session,
                                                                     change)
    assert 1 <= delivered <= 8, delivered  # 3 per stall, so about 3-6


@pytest.mark.anyio
async def test_small_frames_to_a_viewer_that_never_acknowledges_stay_bounded(
        managed, api, server, painter):
    """Small frames go beyond the window (a long round trip must not hold typing back), up
    to MOST_IN_FLIGHT in flight: each takes its place for a stall (1 s), so at most that
    many a second (and the first keyframe, large and unacknowledged, holds them to the
    window until it expires)."""
    _, session, _ = managed

    def change(i: int) -> None:
        painter.fill(0, 0, 50, 50, 0x010101 * (i + 1))
        painter.sync()

    delivered, seconds = await _frames_to_a_viewer_that_never_acknowledges(server, api,
                                                                           session, change)
    assert 8 <= delivered <= MOST_IN_FLIGHT * (seconds + 1), (delivered, seconds)


@pytest.fixture
def desktop_app(x_display):
    """Another X client, as the user's application: copies and pastes through Tk."""
    root = tk_root()
    root.withdraw()
    yield root
    root.destroy()


@pytest.mark.anyio
async def test_clipboard_text_both_ways(managed, api, server, desktop_app):
    _, session, _ = managed
    async with open_viewer(server.url, api.viewer_token(session["id"])) as viewer:
        await viewer.next_frame(15)
        await viewer.send("clipboard_data", pb.ClipboardData(
            format=pb.CLIPBOARD_TEXT, data="paste me ✓".encode(), mime_type="text/plain"))
        with anyio.fail_after(5):
            while True:
                desktop_app.update()
                try:
                    if desktop_app.clipboard_get() == "paste me ✓":
                        break
                except Exception:  # not yet owned by the agent
                    pass
                await anyio.sleep(0.05)
        desktop_app.clipboard_clear()
        desktop_app.clipboard_append("copied by the user")
        desktop_app.update()
        with anyio.fail_after(20):
            while True:  # the agent's read needs this owner to answer
                desktop_app.update()
                with anyio.move_on_after(0.05):
                    _, data = await viewer.receive("clipboard_data", within=60)
                    if data.data == b"copied by the user":
                        break
        assert data.format == pb.CLIPBOARD_TEXT


@pytest.mark.anyio
async def test_too_much_clipboard_text_is_refused_with_a_message_both_ways(
        managed, api, server, desktop_app):
    """Above MAX_CLIPBOARD_BYTES neither side's clipboard is shared: the technicians are
    told in the chat, the other clipboard keeps its text, and the session goes on."""
    _, session, _ = managed
    desktop_app.clipboard_clear()
    desktop_app.clipboard_append("kept")
    desktop_app.update()
    async with open_viewer(server.url, api.viewer_token(session["id"])) as viewer:
        await viewer.next_frame(15)
        await viewer.send("clipboard_data", pb.ClipboardData(
            format=pb.CLIPBOARD_TEXT, data=b"x" * (MAX_CLIPBOARD_BYTES + 1)))
        _, said = await viewer.receive("chat_message", within=15)
        assert said.content.startswith("Clipboard not shared: the technician's clipboard "
                                       "holds 1.0 MB of text"), said.content
        desktop_app.update()
        assert desktop_app.clipboard_get() == "kept"
        desktop_app.clipboard_clear()
        desktop_app.clipboard_append("y" * 3 * MAX_CLIPBOARD_BYTES)
        desktop_app.update()
        with anyio.fail_after(20):
            while True:  # the agent's read needs this owner to answer
                desktop_app.update()
                with anyio.move_on_after(0.05):
                    kind, said = await viewer.receive("chat_message", "clipboard_data",
                                                      within=60)
                    break
        assert kind == "chat_message", "a clipboard too large was sent"
        assert "this computer's clipboard holds 3.0 MB" in said.content
        latest = viewer.latest.sequence if viewer.latest else 0
        await viewer.next_frame(15, after=latest)  # the picture goes on


@pytest.mark.anyio
async def test_chat_reaches_the_user_and_replies_come_back(managed, api, server, x_display):
    _, session, agent = managed
    async with open_viewer(server.url, api.viewer_token(session["id"])) as viewer:
        await viewer.next_frame(15)
        await viewer.send("chat_message", pb.ChatMessage(
            id="m1", sender="technician", content="Hello from support",
            timestamp=int(time.time())))
        with anyio.fail_after(5):
            while "[chat] technician: Hello from support" not in agent.output():
                await anyio.sleep(0.05)
        found = await anyio.run_process(
            ["xdotool", "search", "--sync", "--onlyvisible", "--name", "Remote support chat"],
            env=x_display.env())
        window = found.stdout.split()[0].decode()
        await anyio.run_process(["xdotool", "windowfocus", "--sync", window, "type",
                                 "--delay", "20", "thanks!"], env=x_display.env())
        await anyio.run_process(["xdotool", "key", "--window", window, "Return"],
                                env=x_display.env())
        _, reply = await viewer.receive("chat_message", within=10)
        assert (reply.sender, reply.content) == ("client", "thanks!")


def test_remote_viewer_cli_saves_a_screenshot(managed, api, server, tmp_path):
    import zlib

    from remote_server.testing.processes import BIN

    _, session, _ = managed
    out = tmp_path / "shot.png"
    done = subprocess.run([str(BIN / "remote-viewer"), "--server", server.url, "--token",
                           api.viewer_token(session["id"]), "screenshot", str(out)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    data = out.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (800, 600)
    idat = data.index(b"IDAT")
    length = int.from_bytes(data[idat - 4:idat], "big")
    assert len(zlib.decompress(data[idat + 4:idat + 4 + length])) == 600 * (1 + 800 * 3)


def test_remote_viewer_cli_reports_a_bad_token(server):
    from remote_server.testing.processes import BIN

    done = subprocess.run([str(BIN / "remote-viewer"), "--server", server.url, "--token",
                           "not-a-token", "screenshot", "/dev/null"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "refused" in done.stderr

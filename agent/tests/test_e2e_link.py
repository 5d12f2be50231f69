"""The automatic codec over a slow link: a real agent behind a shaped link, a real server.

The agent runs in a network namespace of the test's own, joined to this one by a
TUN pair shaped to 2 Mbit/s and 120 ms (``remote_server.testing.link``). A moving
screen must not go out lossless (a 800x600 picture of noise is 1.9 MB, 7.5 s of
that link for one frame): it goes out as H.264 at once, and when the
screen stops, the lossless picture of that noise is too big to restore, so the
stream stays in H.264 instead of stalling. A desktop-like picture, which is
small in lossless, comes back lossless and exact, in parts drawn over the video
picture, which a motion starting again cuts short. No timing is asserted: the
sizes and codecs of the frames that arrive say what the agent chose.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import anyio
import numpy as np
import pytest
from remote_server.testing.link import LINKS, shaped_link
from remote_server.testing.processes import AgentProcess, Api, ServerProcess
from remote_viewer.client import Frame, open_viewer

from remote_core.testing.codec_contract import Desktop
from remote_core.testing.xvfb import blank_painter

pytestmark = [
    pytest.mark.xvfb, pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0 or not Path("/dev/net/tun").exists()
                       or shutil.which("ip") is None,
                       reason="a shaped link needs root, /dev/net/tun and ip (iproute2)"),
]

LINK = LINKS[1]  # 2 Mbit/s, 120 ms
WIDTH, HEIGHT = 800, 600


@pytest.fixture(scope="module")
def linked(tmp_path_factory: pytest.TempPathFactory, x_display):
    """A server listening on every address, and an agent reaching it across the link."""
    tmp_path = tmp_path_factory.mktemp("linked")
    with shaped_link(LINK, index=9) as link:
        server = ServerProcess(tmp_path / "server")
        server.listen = "0.0.0.0"  # the agent comes across the link's pair
        server.start()
        api = Api(server)
        agent_id, key = api.machine_with_key()
        agent = AgentProcess(tmp_path / "agent", x_display.display, "--server",
                             f"http://{link.near}:{server.port}", "--key", key,
                             prefix=link.prefix)
        try:
            session = api.live_session(agent_id)
            yield server, api, session["id"]
        finally:
            agent.stop()
            api.close()
            server.stop()


@pytest.mark.anyio
async def test_a_moving_screen_over_a_slow_link_goes_out_as_video_and_stays_there(
        linked, x_display) -> None:
    server, api, session_id = linked
    rng = np.random.default_rng(5)
    desktop = Desktop(WIDTH, HEIGHT, seed=4)
    seen: list[Frame] = []
    with blank_painter(x_display.display) as painter:
        painter.put_bgra(0, 0, WIDTH, HEIGHT, desktop.image.tobytes())
        painter.sync()
        async with open_viewer(server.url, api.viewer_token(session_id)) as viewer:
            first = await viewer.wait_for_image(
                lambda image: np.array_equal(image[:, :, :3], desktop.image[:, :, :3]), 30)
            assert first.codec == "raw"  # a desktop is small in lossless: exact at once
            video = anyio.Event()

            async def watch() -> None:
                after = first.sequence
                while True:
                    frame = await viewer.next_frame(60, after=after)
                    seen.append(frame)
                    after = frame.sequence
                    if frame.codec == "h264":
                        video.set()

            async with anyio.create_task_group() as group:
                group.start_soon(watch)
                moved = len(seen)
                for _ in range(45):  # a second and a half of a moving screen
                    noise = rng.integers(0, 256, (HEIGHT, WIDTH, 4), dtype=np.uint8)
                    painter.put_bgra(0, 0, WIDTH, HEIGHT, noise.tobytes())
                    painter.sync()
                    await anyio.sleep(1 / 30)
                with anyio.fail_after(30):
                    await video.wait()
                # Nothing moved lossless: no frame near a noise picture's 1.9 MB came.
                assert all(f.size < 400_000 for f in seen[moved:]), \
                    [(f.codec, f.size) for f in seen[moved:]]

                stopped = len(seen)  # the screen stops on noise: too big to restore
                await anyio.sleep(3)  # the calm second, and the retry two seconds later
                assert all(f.codec == "h264" for f in seen[stopped:]), \
                    [(f.codec, f.size) for f in seen[stopped:]]

                calmed = len(seen)
                # A desktop again, with a band of a photo: lossless and exact once calm (the
                # band's rows take longer than a change may on this link; the whole picture
                # is within what a restore may).
                shown = desktop.image.copy()
                shown[300:348] = rng.integers(0, 256, (48, WIDTH, 4), dtype=np.uint8)
                painter.put_bgra(0, 0, WIDTH, HEIGHT, shown.tobytes())
                painter.sync()
                exact = await viewer.wait_for_image(
                    lambda image: np.array_equal(image[:, :, :3], shown[:, :, :3]), 60)
                # Drawn over the video picture in parts, each about a tenth of a second of
                # the link, which a motion starting again could cut short. (The keyframe
                # due every 10 s may come among them: it is whole.)
                raw = [f for f in seen[calmed:] if f.codec == "raw"]
                assert exact.codec == "raw" and len(raw) >= 2, \
                    [(f.codec, f.keyframe, f.size) for f in seen[calmed:]]
                assert not raw[0].keyframe and raw[0].size < 64_000
                assert not np.array_equal(raw[0].image[:, :, :3], shown[:, :, :3])
                group.cancel_scope.cancel()


@pytest.mark.anyio
async def test_a_motion_cuts_short_the_lossless_picture_coming_back_in_parts(
        linked, x_display) -> None:
    """The screen moves again while the picture restored after motion is on its way: the
    parts not sent yet give way to video, instead of the motion waiting behind them."""
    server, api, session_id = linked
    rng = np.random.default_rng(6)
    picture = Desktop(WIDTH, HEIGHT, seed=6).image.copy()
    # About 150 KB of noise: some ten parts over this link, well within its restore budget.
    picture[100:292, 200:392] = rng.integers(0, 256, (192, 192, 4), dtype=np.uint8)
    seen: list[Frame] = []
    with blank_painter(x_display.display) as painter:
        async def move(frames: int) -> None:
            for _ in range(frames):
                noise = rng.integers(0, 256, (HEIGHT, WIDTH, 4), dtype=np.uint8)
                painter.put_bgra(0, 0, WIDTH, HEIGHT, noise.tobytes())
                painter.sync()
                await anyio.sleep(1 / 30)

        came = anyio.Event()

        async def arrives(check: Callable[[Frame], bool], since: int) -> None:
            nonlocal came
            with anyio.fail_after(30):
                while not any(check(f) for f in seen[since:]):
                    await came.wait()
                    came = anyio.Event()

        async with open_viewer(server.url, api.viewer_token(session_id)) as viewer:
            async def watch() -> None:
                after = 0
                while True:
                    frame = await viewer.next_frame(60, after=after)
                    seen.append(frame)
                    came.set()
                    after = frame.sequence

            async with anyio.create_task_group() as group:
                group.start_soon(watch)
                await arrives(lambda f: True, 0)  # the stream started
                await move(30)
                await arrives(lambda f: f.codec == "h264", 0)
                calmed = len(seen)
                painter.put_bgra(0, 0, WIDTH, HEIGHT, picture.tobytes())
                painter.sync()
                # The restore began (the keyframe due every 10 s would be whole).
                await arrives(lambda f: f.codec == "raw" and not f.keyframe, calmed)
                restoring = len(seen)
                await move(30)
                await arrives(lambda f: f.codec == "h264", restoring)
                group.cancel_scope.cancel()
    back = next(i for i in range(restoring, len(seen)) if seen[i].codec == "h264")
    last = seen[back - 1]
    assert last.codec == "raw" and not last.keyframe, \
        [(f.codec, f.keyframe, f.size) for f in seen[calmed:back + 1]]
    # Cut short: the bottom of the screen, which the parts had not reached when the screen
    # moved again, still shows the video's picture (close, not exact), neither the
    # lossless one nor the moving screen the rest of the parts would have carried.
    bottom = slice(HEIGHT * 3 // 4, HEIGHT)
    shown = last.image[bottom, :, :3].astype(int)
    assert not np.array_equal(shown, picture[bottom, :, :3])
    assert np.abs(shown - picture[bottom, :, :3]).mean() < 12


@pytest.mark.anyio
async def test_a_lossless_codec_the_viewer_chose_sends_large_frames_one_at_a_time(
        linked, x_display) -> None:
    """Lossless chosen in the viewer, a photo dragged about over the slow link: each frame
    of it takes over a second of the link. They go one at a time, so once the drag stops
    the exact picture comes right after the frame on its way, not behind a queue of
    older ones (frames in flight counted as delivered after a second, while the agent's
    own socket still held them, and more went behind them)."""
    server, api, session_id = linked
    rng = np.random.default_rng(7)
    desktop = Desktop(WIDTH, HEIGHT, seed=7)
    # Rows, columns of noise: 400 KB a frame, 1.6 s of the link at its line rate, so over
    # the second of it the frames in flight may take, whatever the agent measured of it.
    photo = (250, 400)
    with blank_painter(x_display.display) as painter:
        painter.put_bgra(0, 0, WIDTH, HEIGHT, desktop.image.tobytes())
        painter.sync()
        async with open_viewer(server.url, api.viewer_token(session_id),
                               codec="raw") as viewer:
            await viewer.wait_for_image(
                lambda image: np.array_equal(image[:, :, :3], desktop.image[:, :, :3]), 30)
            shown = desktop.image.copy()
            for step in range(90):  # three seconds of dragging
                shown = desktop.image.copy()
                top, left = 50 + step * 2, 50 + step * 3
                shown[top:top + photo[0], left:left + photo[1]] = rng.integers(
                    0, 256, (*photo, 4), dtype=np.uint8)
                painter.put_bgra(0, 0, WIDTH, HEIGHT, shown.tobytes())
                painter.sync()
                await anyio.sleep(1 / 30)
            stopped = viewer.bytes_received
            final = await viewer.wait_for_image(
                lambda image: np.array_equal(image[:, :, :3], shown[:, :, :3]), 60)
            assert final.codec == "raw"
            # The frame on its way when the drag stopped, then the last picture: about
            # two frames of the photo, not the four or more a queue held.
            frame_bytes = photo[0] * photo[1] * 4
            assert viewer.bytes_received - stopped < 2.5 * frame_bytes, \
                (viewer.bytes_received - stopped) / frame_bytes

"""Session recording into S3 end to end: a real server process whose ``recordings_url`` is
moto's bucket, a real managed agent under Xvfb, the Python viewer watching with the raw
codec.

What the server wrote verifies through ``remote-support recordings verify`` and decodes,
from the objects in the bucket, to the picture shown. With the endpoint frozen (SIGSTOP)
while a changing screen is watched, the viewer keeps its frame rate, and the recording
ends ``incomplete`` with the reason once the viewer leaves; what was written before the
stall verifies.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import numpy as np
import pytest
from remote_server.testing.processes import AgentProcess, Api, ServerProcess
from remote_server.testing.recordings import paint, recordings_cli, shows
from remote_viewer.client import ViewerClient, open_viewer
from remote_viewer.settings import ViewerSettings

from remote_core.codecs import FrameDecoder
from remote_core.plugins import get_plugin_manager
from remote_core.protocol import pb
from remote_core.recording import read_segment
from remote_core.testing.browser import wait_until
from remote_core.testing.xvfb import Painter, Xvfb, xvfb
from remote_core.video import from_wire

pytestmark = [pytest.mark.slow, pytest.mark.xvfb]

WIDTH, HEIGHT = 480, 360
MiB = 1024 * 1024
PREFIX = "e2e"
BUFFER = 24 * MiB
"""The recording buffer: one segment cut at 16 MiB fits, a second behind it does not."""


@pytest.fixture(scope="module")
def display() -> Iterator[Xvfb]:
    with xvfb(WIDTH, HEIGHT, set_display=False) as server:
        yield server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, moto: Any,
           aws_variables: dict[str, str]) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path_factory.mktemp("s3-recording-server"), recordings="on",
                            recordings_url=moto.url(PREFIX), recording_buffer_bytes=BUFFER)
    process.env = {k: v for k, v in process.env.items() if not k.startswith("AWS_")}
    process.env.update(aws_variables)
    process.start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def api(server: ServerProcess) -> Iterator[Api]:
    client = Api(server)
    yield client
    client.close()


def objects(moto: Any, recording_id: str) -> list[str]:
    """The keys of a recording's objects in the bucket, in order."""
    listed = moto.client().list_objects_v2(Bucket=moto.bucket,
                                           Prefix=f"{PREFIX}/{recording_id}/")
    return sorted(o["Key"] for o in listed.get("Contents", ()))


def test_a_session_recorded_into_s3_verifies_and_decodes_to_the_screen(
        tmp_path: Path, display: Xvfb, server: ServerProcess, api: Api, moto: Any) -> None:
    rgb = 0x3366CC
    paint(display, rgb, WIDTH, HEIGHT)
    agent_id, key = api.machine_with_key()
    agent = AgentProcess(tmp_path / "agent", display.display, "--server", server.url,
                         "--key", key)
    try:
        session_id = api.live_session(agent_id)["id"]

        async def watch() -> None:
            async with open_viewer(server.url, api.viewer_token(session_id),
                                   codec="raw") as viewer:
                await viewer.wait_for_image(lambda image: shows(image, rgb), within=30)
                await anyio.sleep(0.5)

        anyio.run(watch)
        [ended] = wait_until(lambda: api.events(session_id, "recording.finished"),
                             what="the recording's end audited")
        detail = ended["detail"]
        assert detail["state"] == "complete", detail
        recording_id = detail["recording_id"]

        checked = recordings_cli(server, "verify", recording_id)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert "is intact" in checked.stdout and detail["sha256"] in checked.stdout

        # the segments, read back from the bucket, decode to the picture shown
        keys = objects(moto, recording_id)
        assert keys == [f"{PREFIX}/{recording_id}/{i:06d}.seg"
                        for i in range(detail["segments"])]
        decoder = FrameDecoder(get_plugin_manager(ViewerSettings.load()).codecs())
        shown = []
        for object_key in keys:
            data = moto.client().get_object(Bucket=moto.bucket, Key=object_key)["Body"].read()
            for _, record in read_segment(data).records:
                message = pb.Message()
                message.ParseFromString(record)
                if message.WhichOneof("payload") == "video_frame":
                    image = decoder.decode(*from_wire(message.video_frame))
                    if image is not None:
                        shown.append(np.asarray(image))
        assert shown and shows(shown[-1], rgb)
    finally:
        agent.stop()


class Noise:
    """A screen that keeps changing: incompressible noise, whole, about 12 times a second
    (some 8 MB/s of raw video, so segments seal every couple of seconds)."""

    def __init__(self, display: Xvfb) -> None:
        self._display = display
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        painter = Painter(self._display.display)
        try:
            while not self._stop.is_set():
                painter.put_bgra(0, 0, WIDTH, HEIGHT, os.urandom(WIDTH * HEIGHT * 4))
                painter.sync()
                self._stop.wait(0.08)
        finally:
            painter.close()

    def __enter__(self) -> Noise:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


async def frame_rate(viewer: ViewerClient, seconds: float) -> float:
    """Frames the viewer decoded per second over the next ``seconds``."""
    first, began = viewer.frames_received, time.monotonic()
    await anyio.sleep(seconds)
    return (viewer.frames_received - first) / (time.monotonic() - began)


async def waited(check: Callable[[], Any], what: str, within: float = 20) -> Any:
    """:func:`wait_until` in a worker thread, so the viewer keeps reading meanwhile."""
    return await anyio.to_thread.run_sync(lambda: wait_until(check, within, what))


def test_a_stalled_store_never_slows_the_viewer_and_ends_the_recording_incomplete(
        tmp_path: Path, display: Xvfb, server: ServerProcess, api: Api, moto: Any) -> None:
    agent_id, key = api.machine_with_key()
    agent = AgentProcess(tmp_path / "agent", display.display, "--server", server.url,
                         "--key", key)
    rates: dict[str, float] = {}
    try:
        with Noise(display), contextlib.ExitStack() as stalled:
            session_id = api.live_session(agent_id)["id"]
            token = api.viewer_token(session_id)

            async def watch() -> str:
                async with open_viewer(server.url, token, codec="raw") as viewer:
                    await viewer.next_frame(within=30)
                    [started] = await waited(
                        lambda: api.events(session_id, "recording.started"),
                        "the recording's start audited")
                    recording_id: str = started["detail"]["recording_id"]
                    await waited(lambda: objects(moto, recording_id),
                                 "a first segment in the bucket")
                    rates["before"] = await frame_rate(viewer, 3)
                    stalled.enter_context(moto.stalled())  # until the end is audited
                    rates["stalled"] = await frame_rate(viewer, 4)
                return recording_id

            recording_id = anyio.run(watch)
            print(f"viewer frames per second: {rates}")
            [ended] = wait_until(lambda: api.events(session_id, "recording.finished"),
                                 timeout=45, what="the recording's end audited")
        detail = ended["detail"]
        print(f"recording ended: {detail['state']}: {detail['reason']}")
        assert rates["stalled"] >= rates["before"] / 2, rates
        assert rates["before"] >= 3, rates  # a changing screen, watched
        assert detail["recording_id"] == recording_id
        assert detail["state"] == "incomplete", detail
        assert "recording store" in detail["reason"], detail
        # what was written before the store stalled is intact (its hash covers just that)
        checked = recordings_cli(server, "verify", recording_id)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert "is intact" in checked.stdout and "incomplete" in checked.stdout
    finally:
        agent.stop()

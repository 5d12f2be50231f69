"""Session recording end to end: a real server process with recordings on, a real managed
agent under Xvfb, the Python viewer watching; then what operators have: the recording's row
through ``remote-support recordings``, its segments in the files store, the audit log.

The recording holds the video exactly as relayed: decoded with the same codec plugins the
viewers use, its frames show what the screen showed, in the raw codec and in H.264. A byte
changed in a stored segment makes ``recordings verify`` fail and name that segment.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import av
import pytest
from remote_server.testing.processes import BIN, AgentProcess, Api, ServerProcess
from remote_server.testing.recordings import paint, pictures, recordings_cli, shows
from remote_viewer.client import open_viewer
from remote_viewer.settings import ViewerSettings

from remote_core.codecs import FrameDecoder
from remote_core.plugins import get_plugin_manager
from remote_core.recording import HEADER
from remote_core.testing.browser import wait_until
from remote_core.testing.xvfb import Xvfb

from .conftest import HEIGHT, WIDTH

pytestmark = [pytest.mark.slow, pytest.mark.xvfb]

LOSSY = 12
"""How far a decoded channel may stray from the painted one (H.264, and the exports)."""
COLOURS = {"raw": (0x3366CC, 0x22AA44), "h264": (0xCC6633, 0x8833AA)}


def looks(image: Any, rgb: int) -> bool:
    return shows(image, rgb, tolerance=LOSSY)


@pytest.mark.parametrize("codec", ["raw", "h264"])
def test_a_watched_session_is_recorded_as_relayed_and_verifies(
        tmp_path: Path, display: Xvfb, server: ServerProcess, api: Api, codec: str) -> None:
    rgb, then = COLOURS[codec]
    paint(display, rgb, WIDTH, HEIGHT)
    agent_id, key = api.machine_with_key()
    agent = AgentProcess(tmp_path / "agent", display.display, "--server", server.url,
                         "--key", key)
    try:
        session_id = api.live_session(agent_id)["id"]

        async def watch() -> None:
            async with open_viewer(server.url, api.viewer_token(session_id),
                                   codec=codec) as viewer:
                await viewer.wait_for_image(lambda image: looks(image, rgb), within=30)
                await anyio.sleep(0.6)
                paint(display, then, WIDTH, HEIGHT)  # the screen changes while it is recorded
                await viewer.wait_for_image(lambda image: looks(image, then), within=30)

        anyio.run(watch)
        # the last viewer left: the recording ended, complete, with its chain's hash
        def finished() -> list[dict[str, Any]]:
            return api.events(session_id, "recording.finished")

        [ended] = wait_until(finished, what="the recording's end audited")
        detail = ended["detail"]
        assert detail["state"] == "complete", detail
        assert detail["reason"] == "the last technician left"
        assert detail["segments"] >= 1 and len(detail["sha256"]) == 64
        assert len(api.events(session_id, "recording.started")) == 1
        recording_id = detail["recording_id"]
        listed = recordings_cli(server, "list", "--session-id", session_id)
        assert listed.returncode == 0, listed.stderr
        assert recording_id in listed.stdout and "complete" in listed.stdout

        checked = recordings_cli(server, "verify", recording_id)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert "is intact" in checked.stdout and detail["sha256"] in checked.stdout

        # the recording decodes, with the viewers' own codec plugins, to the screen shown
        folder = server.workdir / "recordings" / recording_id
        files = sorted(folder.glob("*.seg"))
        assert len(files) == detail["segments"]
        decoded = pictures(folder, FrameDecoder(get_plugin_manager(ViewerSettings.load())
                                                .codecs()))
        assert {name for _, name, _ in decoded} == {codec}
        times = [at for at, _, _ in decoded]
        shown = [image for _, _, image in decoded]
        # the recording shows the first picture, then, 0.6 s and more later, the second
        assert times == sorted(times), times
        first = next(t for t, image in zip(times, shown, strict=True) if looks(image, rgb))
        second = next(t for t, image in zip(times, shown, strict=True) if looks(image, then))
        assert second - first >= 550, (first, second)
        assert looks(shown[-1], then)

        # exported: H.264 into MP4 as relayed, anything else encoded; any player decodes it
        for suffix in (".mp4", ".webm"):
            out = tmp_path / f"export{suffix}"
            made = recordings_cli(server, "export", recording_id, str(out))
            assert made.returncode == 0, made.stdout + made.stderr
            assert ("as recorded" in made.stdout) == (codec == "h264" and suffix == ".mp4")
            with av.open(str(out)) as container:
                exported = [f.to_ndarray(format="bgra") for f in container.decode(video=0)]
            assert len(exported) == len(shown), (suffix, len(exported), len(shown))
            assert looks(exported[0], rgb) and looks(exported[-1], then), suffix

        # one byte of a stored segment changed: verification fails and names the segment
        damaged = files[-1]
        data = bytearray(damaged.read_bytes())
        data[HEADER.size + 20] ^= 0x40
        damaged.write_bytes(bytes(data))
        checked = recordings_cli(server, "verify", recording_id)
        assert checked.returncode == 1, checked.stdout + checked.stderr
        assert "NOT intact" in checked.stdout
        assert f"segment {len(files) - 1}" in checked.stdout
        refused = recordings_cli(server, "export", recording_id, str(tmp_path / "no.mp4"))
        assert refused.returncode == 2 and "is not intact" in refused.stderr
        assert not (tmp_path / "no.mp4").exists()
    finally:
        agent.stop()


def test_an_unknown_recording_is_a_clear_error(server: ServerProcess) -> None:
    checked = recordings_cli(server, "verify", "no-such-recording")
    assert checked.returncode == 2
    assert "no recording no-such-recording" in checked.stderr


def test_a_recording_store_it_cannot_use_stops_start_up_in_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    env = {**os.environ, "REMOTE_SUPPORT_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}",
           "REMOTE_SUPPORT_PORT": "0", "REMOTE_SUPPORT_RECORDINGS": "on",
           "REMOTE_SUPPORT_RECORDINGS_URL": f"file://{blocker}/recordings"}
    ran = subprocess.run([str(BIN / "remote-support"), "serve"], env=env, capture_output=True,
                         text=True, timeout=60)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert ran.stderr.strip().splitlines()[-1].startswith(
        "remote-support: error: setting 'recordings_url': cannot create the recordings folder")
    assert "Traceback" not in ran.stderr

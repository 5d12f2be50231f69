"""Playback in the console: a session recorded from a real agent under Xvfb (raw frames and
H.264), found on the console's recordings page in Chromium and played in its player, which
draws with the live viewer's code. The canvas shows, at a seek point, what the recording's
frames show at that time (decoded in Python with the viewers' codec plugins); seeking by an
event lands on it; playing at 8x reaches the last picture; the integrity badge says intact,
and "not intact" once a stored byte changes. A command run in the console's terminal
(a real agent's shell) is an event of its recording, and the player shows its output.

Under the shipped CSP: any page error, console error or violation fails the test.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from remote_server.testing.processes import ADMIN_PASSWORD, AgentProcess, Api, ServerProcess
from remote_server.testing.recordings import paint, pictures, shows
from remote_viewer.client import open_viewer
from remote_viewer.settings import ViewerSettings

from remote_core.codecs import FrameDecoder
from remote_core.plugins import get_plugin_manager
from remote_core.protocol import pb
from remote_core.recording import HEADER
from remote_core.testing.browser import log_in, wait_until, watched_context
from remote_core.testing.xvfb import Xvfb

from .conftest import HEIGHT, WIDTH

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.xvfb]

LOSSY = 16
COLOURS = {"raw": (0x3366CC, 0x22AA44), "h264": (0xCC6633, 0x8833AA)}
CHAT = "restarting the print spooler now"

PIXELS = """() => {
  const c = document.getElementById("screen");
  const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
  return {width: c.width, height: c.height, data: Array.from(d)};
}"""
SETTLED = "() => window.remotePlayer.state.seeking === null"
SAME_MILLISECOND = """() => {
  const {state, seek} = window.remotePlayer;
  const command = state.events.find((e) => e.text.startsWith("$ echo recorded-"));
  const output = state.output.find((o) => o.text.includes("recorded-42"));
  seek(state.records[output.index].at, command.index);
}"""


def record(tmp_path: Path, display: Xvfb, server: ServerProcess, api: Api,
           codec: str) -> dict[str, Any]:
    """A watched session: the first colour, a chat line, then the second colour; returns
    the recording's ``recording.finished`` detail."""
    first, then = COLOURS[codec]
    paint(display, first, WIDTH, HEIGHT)
    agent_id, key = api.machine_with_key()
    agent = AgentProcess(tmp_path / "agent", display.display, "--server", server.url,
                         "--key", key)
    try:
        session_id = api.live_session(agent_id)["id"]

        async def watch() -> None:
            async with open_viewer(server.url, api.viewer_token(session_id),
                                   codec=codec) as viewer:
                await viewer.wait_for_image(lambda i: shows(i, first, tolerance=LOSSY), within=30)
                await anyio.sleep(0.8)
                await viewer.send("chat_message", pb.ChatMessage(
                    id="c1", sender="technician", content=CHAT))
                await anyio.sleep(0.8)
                paint(display, then, WIDTH, HEIGHT)
                await viewer.wait_for_image(lambda i: shows(i, then, tolerance=LOSSY), within=30)
                await anyio.sleep(0.5)

        # in a thread of its own: Playwright's sync API holds an event loop in this one
        with ThreadPoolExecutor(1) as pool:
            pool.submit(anyio.run, watch).result()
        [ended] = wait_until(lambda: api.events(session_id, "recording.finished"),
                             what="the recording's end audited")
    finally:
        agent.stop()
    assert ended["detail"]["state"] == "complete", ended["detail"]
    return dict(ended["detail"])


def picture_at(shown: list[tuple[int, np.ndarray]], at_ms: int) -> np.ndarray:
    """The picture on screen ``at_ms`` into the recording: the last one shown by then."""
    return [image for at, image in shown if at <= at_ms][-1]


def alike(got: np.ndarray, want: np.ndarray, codec: str) -> bool:
    """The same picture: exactly for raw frames; for H.264, decoded by Chromium and by
    PyAV, within a lossy decoder's rounding almost everywhere."""
    if got.shape != want.shape:
        return False
    off = np.abs(got[:, :, :3].astype(int) - want[:, :, :3].astype(int))
    return bool(off.max() == 0 if codec == "raw" else np.percentile(off, 99) <= LOSSY)


def canvas(page: Any) -> np.ndarray:
    """The player's canvas as a BGRA array, as Python's decoders give pictures."""
    got = page.evaluate(PIXELS)
    rgba = np.array(got["data"], dtype=np.uint8).reshape(got["height"], got["width"], 4)
    return rgba[:, :, [2, 1, 0, 3]]


def seek(page: Any, at_ms: int) -> np.ndarray:
    page.evaluate("(at) => window.remotePlayer.seek(at)", at_ms)
    wait_until(lambda: page.evaluate(SETTLED), what="the seek drawn")
    return canvas(page)


@pytest.mark.parametrize("codec", ["raw", "h264"])
def test_the_console_plays_a_recording_at_its_times(
        tmp_path: Path, display: Xvfb, server: ServerProcess, api: Api, browser: Any,
        codec: str) -> None:
    first, then = COLOURS[codec]
    detail = record(tmp_path, display, server, api, codec)
    recording_id = detail["recording_id"]
    shown = [(at, image) for at, _, image in pictures(
        server.workdir / "recordings" / recording_id,
        FrameDecoder(get_plugin_manager(ViewerSettings.load()).codecs()))]
    changed = next(at for at, image in shown if shows(image, then, tolerance=LOSSY))
    before = [at for at, image in shown if shows(image, first, tolerance=LOSSY)]
    assert before and changed - before[0] >= 1000, (before[:3], changed)

    with watched_context(browser) as context:
        page = context.new_page()
        log_in(page, server.url, "admin", ADMIN_PASSWORD)
        page.goto(f"{server.url}/console/#recordings")
        row = page.locator(f"tr[data-recording-id='{recording_id}']")
        row.wait_for()
        assert "complete" in row.inner_text()
        row.get_by_role("button", name="Check").click()
        row.locator(".badge.intact").wait_for()
        row.get_by_role("link", name="Play").click()
        page.wait_for_url("**/player.html?recording=*")
        page.locator("#integrity[data-integrity='intact']").wait_for()
        page.locator("#state[data-state='ready']").wait_for()

        # seek points: the canvas shows what the recording's frames show at each time
        # (the agent's chat window opened between the two colours)
        points = [(before[0] + shown[1][0]) // 2, changed - 100, changed + 50, shown[-1][0]]
        for at in points:
            assert alike(seek(page, at), picture_at(shown, at), codec), at
        assert shows(seek(page, points[0]), first, tolerance=LOSSY)
        assert shows(seek(page, points[2]), then, tolerance=LOSSY)

        # by event: the chat line, sent while the first picture showed
        event = page.locator("#events button[data-kind='chat']")
        assert CHAT in event.inner_text()
        event.click()
        wait_until(lambda: page.evaluate(SETTLED), what="the event's seek drawn")
        at_chat = int(event.get_attribute("data-at") or "0")
        assert before[0] <= at_chat < changed
        assert page.evaluate("window.remotePlayer.state.position") == at_chat
        assert alike(canvas(page), picture_at(shown, at_chat), codec)

        # played from the start at 8x: through to the end, showing the last picture
        seek(page, 0)
        page.select_option("#speed", "8")
        page.click("#play")
        page.locator("#state[data-state='ended']").wait_for(timeout=30_000)
        assert shows(canvas(page), then, tolerance=LOSSY)

        # one stored byte changed: the player's badge says so
        segment = min((server.workdir / "recordings" / recording_id).glob("*.seg"))
        data = bytearray(segment.read_bytes())
        data[HEADER.size + 20] ^= 0x40
        segment.write_bytes(bytes(data))
        page.reload()
        page.locator("#integrity[data-integrity='tampered']").wait_for()


def test_the_recordings_page_is_the_permissions_own(server: ServerProcess, api: Api,
                                                     browser: Any) -> None:
    """A technician without the 'recordings' permission has no recordings page and the
    player cannot open one (the REST API answers 403)."""
    password = "no-recordings-tech-pass"
    made = api.post("/api/users", json={"username": "plain-tech", "password": password,
                                        "role": "technician", "permissions": ["view"]})
    assert made.status_code == 201, made.text
    with watched_context(browser, allow=("403",)) as context:
        page = context.new_page()
        log_in(page, server.url, "plain-tech", password)
        assert page.locator("nav a[href='#recordings']").count() == 0
        page.goto(f"{server.url}/console/player.html?recording=any-recording")
        page.locator("#state[data-state='error']").wait_for()
        assert "'recordings' permission" in page.inner_text("#state")


def test_a_recorded_terminal_plays_with_its_commands_as_events(
        tmp_path: Path, display: Xvfb, server: ServerProcess, api: Api, browser: Any) -> None:
    """A technician runs a command in the console's terminal (no screen viewer): the
    recording holds it; the player lists the command as an event and shows the output."""
    agent_id, key = api.machine_with_key()
    agent = AgentProcess(tmp_path / "agent", display.display, "--server", server.url,
                         "--key", key, REMOTE_AGENT_BACKSTAGE_SHELL="/bin/bash")
    try:
        session_id = api.live_session(agent_id)["id"]
        with watched_context(browser) as context:
            page = context.new_page()
            log_in(page, server.url, "admin", ADMIN_PASSWORD)
            with page.expect_popup() as popup:
                page.evaluate("(id) => window.open(`./terminal.html?session=${id}`)",
                              session_id)
            term = popup.value
            term.wait_for_selector("#state[data-state=connected]", timeout=30_000)
            term.click("#terminal")
            term.keyboard.type("echo recorded-$((6*7))")
            term.keyboard.press("Enter")
            wait_until(lambda: any(line.startswith("recorded-42") for line in
                                   term.evaluate("window.remoteTerminal.lines()")),
                       what="the command's output")
            term.close()
            [ended] = wait_until(lambda: api.events(session_id, "recording.finished"),
                                 what="the recording's end audited")
            recording_id = ended["detail"]["recording_id"]

            page.goto(f"{server.url}/console/player.html?recording={recording_id}")
            page.locator("#state[data-state='ready']").wait_for()
            command = page.locator("#events button[data-kind='command']",
                                   has_text="$ echo recorded-$((6*7))")
            command.wait_for()
            assert "admin opened a terminal" in page.inner_text("#events")
            command.click()
            wait_until(lambda: page.evaluate(SETTLED), what="the command's seek drawn")
            assert "recorded-42" not in page.inner_text("#terminal-log")  # not run yet
            # Its output may share the command's millisecond: the event's seek still stops
            # at the command's own record.
            page.evaluate(SAME_MILLISECOND)
            wait_until(lambda: page.evaluate(SETTLED), what="the tied seek drawn")
            assert "recorded-42" not in page.inner_text("#terminal-log")
            seek(page, page.evaluate("window.remotePlayer.state.duration"))
            assert "recorded-42" in page.inner_text("#terminal-log")
    finally:
        agent.stop()

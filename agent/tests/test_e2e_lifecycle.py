"""Agent lifecycle against a real server process: displays, consent, uninstall, reconnect."""

from __future__ import annotations

import subprocess
import time

import anyio
import httpx
import pytest
from remote_server.testing.deviations import shortened_timeouts
from remote_server.testing.liveserver import eventually
from remote_server.testing.processes import AgentProcess, Api, ServerProcess, settings_env
from remote_viewer.client import open_viewer

from remote_core.protocol import pb
from remote_core.testing.xvfb import Painter, xvfb

pytestmark = [pytest.mark.xvfb, pytest.mark.slow]

DIALOG = "Remote support request"


def _find_dialog(env) -> str:
    found = subprocess.run(["xdotool", "search", "--sync", "--onlyvisible", "--name", DIALOG],
                           env=env, check=True, capture_output=True, text=True, timeout=20)
    return found.stdout.split()[0]


def _press_in_dialog(env, keys: str, window: str | None = None) -> None:
    subprocess.run(["xdotool", "windowfocus", "--sync", window or _find_dialog(env), "key",
                    keys], env=env, check=True, timeout=10)


@pytest.fixture
def quick(tmp_path):
    """A server with every timeout a tenth of the shipped one (heartbeat 1.5 s, silence
    4.5 s, consent 6 s), and the same timing for agents, the way they read it."""
    timeouts = shortened_timeouts(0.1)
    server = ServerProcess(tmp_path / "quick-server", **timeouts).start()
    api = Api(server)
    yield server, api, timeouts
    api.close()
    server.stop()


def _ended(api: Api, agent_id: str, within: float = 15) -> dict:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        for item in api.get("/api/sessions").json():
            if item["agent_id"] == agent_id and not item["live"]:
                return item
        time.sleep(0.1)
    raise AssertionError("the session did not end")


# -- displays ---------------------------------------------------------------------------------
@pytest.fixture
def two_monitors():
    """One 640x480 Xvfb screen split into two RandR monitors, red left and blue right."""
    with xvfb(640, 480, set_display=False) as screen:
        env = screen.env()
        subprocess.run(["xrandr", "--setmonitor", "left", "320/80x480/60+0+0", "screen"],
                       env=env, check=True)
        subprocess.run(["xrandr", "--setmonitor", "right", "320/80x480/60+320+0", "none"],
                       env=env, check=True)
        painter = Painter(screen.display)
        painter.fill(0, 0, 320, 480, 0xFF0000)
        painter.fill(320, 0, 320, 480, 0x0000FF)
        painter.sync()
        yield screen
        painter.close()


@pytest.mark.anyio
async def test_switch_display_between_two_monitors(tmp_path, server, api, two_monitors):
    screen = two_monitors
    agent_id, key = api.machine_with_key()
    agent = AgentProcess(tmp_path / "agent", screen.display, "--server", server.url,
                         "--key", key)
    try:
        session = api.live_session(agent_id)
        async with open_viewer(server.url, api.viewer_token(session["id"]),
                               codec=pb.CODEC_RAW) as viewer:
            # the first frames may precede our codec choice: wait for exact pixels
            first = await viewer.wait_for_image(
                lambda image: image[10, 10, :3].tolist() in ([0, 0, 255], [255, 0, 0]), 15)
            info = viewer.display_info
            assert info is not None and len(info.displays) == 2
            primary = next(d for d in info.displays if d.is_primary)
            other = next(d for d in info.displays if not d.is_primary)
            assert first.display_id == primary.id and first.image.shape == (480, 320, 4)
            colour = first.image[10, 10, :3].tolist()
            await viewer.send("switch_display", pb.SwitchDisplay(display_id=other.id))
            switched = await viewer.wait_for_image(
                lambda image: image[10, 10, :3].tolist() != colour, 10)
            assert switched.display_id == other.id and switched.keyframe
            assert {tuple(colour), tuple(switched.image[10, 10, :3].tolist())} == {
                (0, 0, 255), (255, 0, 0)}
    finally:
        agent.stop()


# -- consent ------------------------------------------------------------------------------------
@pytest.mark.anyio
async def test_consent_granted_makes_the_session_live(tmp_path, server, api, x_display):
    code = api.support_code()
    agent = AgentProcess(tmp_path / "agent", x_display.display, "--server", server.url,
                         "--code", code)
    try:
        pending = api.live_session(consent="pending")
        assert api.post(f"/api/sessions/{pending['id']}/viewer-token").status_code == 409
        _press_in_dialog(x_display.env(), "alt+a")
        live = api.live_session(pending["agent_id"], consent="granted")
        async with open_viewer(server.url, api.viewer_token(live["id"])) as viewer:
            frame = await viewer.next_frame(15)
            assert frame.image.shape == (600, 800, 4)
    finally:
        agent.stop()


def test_consent_denied_ends_the_session_and_the_attended_agent(tmp_path, server, api,
                                                                 x_display):
    code = api.support_code()
    agent = AgentProcess(tmp_path / "agent", x_display.display, "--server", server.url,
                         "--code", code)
    try:
        pending = api.live_session(consent="pending")
        _press_in_dialog(x_display.env(), "alt+d")
        assert agent.wait(15) == 0, agent.output()
        ended = _ended(api, pending["agent_id"])
        assert "denied" in (ended["end_reason"] or "")
    finally:
        agent.stop()


def test_consent_timeout_denies(tmp_path, quick, x_display):
    server, api, timeouts = quick
    agent = AgentProcess(tmp_path / "agent", x_display.display, "--server", server.url,
                         "--code", api.support_code(), **settings_env(timeouts))
    try:
        pending = api.live_session(consent="pending")
        assert agent.wait(20) == 0, agent.output()
        assert "consent denied (timeout)" in agent.output()
        ended = _ended(api, pending["agent_id"])
        assert "denied" in (ended["end_reason"] or "") or "timed out" in (
            ended["end_reason"] or "")
    finally:
        agent.stop()


@pytest.mark.anyio
async def test_consent_answered_after_the_heartbeat_timeout_makes_the_session_live(
        tmp_path, quick, x_display):
    """Allow pressed once the heartbeat timeout has passed, before the consent timeout.

    The dialog once blocked the agent's read loop: the heartbeat acks went
    unread, the agent declared the server silent and left, and the Allow
    arrived for a session already gone (the viewer token answered 409).
    """
    server, api, timeouts = quick
    agent = AgentProcess(tmp_path / "agent", x_display.display, "--server", server.url,
                         "--code", api.support_code(), **settings_env(timeouts))
    try:
        pending = api.live_session(consent="pending")
        opened = time.monotonic()  # the session (and the agent's heartbeats) began before
        window = _find_dialog(x_display.env())
        late = (timeouts["heartbeat_timeout"] + timeouts["consent_timeout"]) / 2
        await anyio.sleep(opened + late - time.monotonic())
        _press_in_dialog(x_display.env(), "alt+a", window)
        live = api.live_session(pending["agent_id"], consent="granted")
        r = api.post(f"/api/sessions/{live['id']}/viewer-token")
        assert r.status_code == 200, (r.text, agent.output())
        async with open_viewer(server.url, r.json()["token"]) as viewer:
            await viewer.next_frame(15)
        await anyio.sleep(timeouts["heartbeat_timeout"])  # live past another timeout
        assert api.live_session(pending["agent_id"], consent="granted")["id"] == live["id"]
        assert agent.process.poll() is None and "silent" not in agent.output()
    finally:
        agent.stop()


PANEL = "Remote support session"


def _panel_shown(env) -> bool:
    found = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", PANEL],
                           env=env, capture_output=True, text=True, timeout=10)
    return bool(found.stdout.split())


def _technician(server, api: Api, name: str, *permissions: str) -> httpx.Client:
    password = f"{name}-password-for-tests"
    created = api.post("/api/users", json={"username": name, "password": password,
                                           "role": "technician", "client_access": ["*"],
                                           "permissions": list(permissions)})
    assert created.status_code == 201, created.text
    client = httpx.Client(base_url=server.url, timeout=15)
    r = client.post("/api/auth/login", json={"username": name, "password": password})
    r.raise_for_status()
    client.headers["Authorization"] = f"Bearer {r.json()['access_token']}"
    return client


@pytest.mark.anyio
async def test_a_second_technician_is_asked_in_a_second_dialog_and_shown_once_connected(
        tmp_path, server, api, x_display):
    """The end user allowed the admin; a second technician asking to join brings up a
    second dialog naming them; the session panel shows throughout, naming who is connected."""
    env = x_display.env()
    agent = AgentProcess(tmp_path / "agent", x_display.display, "--server", server.url,
                         "--code", api.support_code())
    second = _technician(server, api, "second-tech", "view")
    try:
        pending = api.live_session(consent="pending")
        _press_in_dialog(env, "alt+a")
        live = api.live_session(pending["agent_id"], consent="granted")
        token_path = f"/api/sessions/{live['id']}/viewer-token"

        def said(connected: str) -> bool:
            return f"[connected now] {connected}\n" in agent.output()

        async with open_viewer(server.url, api.viewer_token(live["id"])) as first:
            await first.next_frame(15)
            await eventually(lambda: said("admin (view and control)"), 15)
            await eventually(lambda: _panel_shown(env), 15)
            asked = second.post(token_path)
            assert asked.status_code == 409 and asked.json()["consent"] == "asking", asked.text
            _press_in_dialog(env, "alt+a")  # the second dialog, naming second-tech
            await eventually(lambda: second.post(token_path).status_code == 200, 15)
            assert "consent granted to second-tech" in agent.output()
            r = second.post(token_path)
            async with open_viewer(server.url, r.json()["token"]) as watching:
                await watching.next_frame(15)
                await eventually(lambda: said("admin (view and control), second-tech (view)"),
                                 15)
        await eventually(lambda: said("nobody"), 15)
        assert _panel_shown(env)  # for the whole attended session, not only while watched
    finally:
        second.close()
        agent.stop()


def test_an_attended_agent_whose_connection_is_lost_ends_in_one_line(tmp_path, x_display):
    """The server dies under a live attended session: the agent tries again, learns that
    its code is used up, and says so in one line (it once died on a traceback)."""
    server = ServerProcess(tmp_path / "srv").start()
    api = Api(server)
    agent = AgentProcess(tmp_path / "agent", x_display.display, "--server", server.url,
                         "--code", api.support_code())
    try:
        pending = api.live_session(consent="pending")
        _press_in_dialog(x_display.env(), "alt+a")
        api.live_session(pending["agent_id"], consent="granted")
        assert server.process is not None
        server.process.kill()  # no goodbye: the connection is simply lost
        server.process.wait()
        server.start()
        assert agent.wait(30) == 1, agent.output()
        output = agent.output()
        assert "Traceback" not in output
        assert "connection lost" in output and "reconnecting in" in output
        last = output.strip().splitlines()[-1]
        assert last == ("remote-agent: the server refused the session: "
                        "support code already used"), output
    finally:
        agent.stop()
        api.close()
        server.stop()


# -- uninstall ------------------------------------------------------------------------------------
def test_admin_uninstall_removes_startup_and_config_then_exits(tmp_path, server, api,
                                                              x_display):
    agent_id, key = api.machine_with_key()
    home = tmp_path / "agent"
    installer = AgentProcess(home, x_display.display, "install", "--server", server.url,
                             "--key", key)
    assert installer.wait(30) == 0, installer.output()
    assert "this agent will not apply updates" in installer.output()  # said plainly
    autostart = home / "config" / "autostart" / "remote-agent.desktop"
    assert autostart.exists() and installer.config_path.exists()
    assert "--config" in autostart.read_text()
    agent = AgentProcess(home, x_display.display, "--config", str(installer.config_path))
    try:
        api.live_session(agent_id)
        r = api.delete(f"/api/machines/{agent_id}", params={"uninstall": "true"})
        assert r.status_code == 200, r.text
        assert agent.wait(20) == 0, agent.output()
        assert not autostart.exists()
        assert not installer.config_path.exists()
        assert not (home / "config" / "remote-agent").exists()
    finally:
        agent.stop()


# -- reconnect ------------------------------------------------------------------------------------
def test_managed_agent_reconnects_after_a_server_restart_keeping_its_machine(tmp_path,
                                                                           x_display):
    server = ServerProcess(tmp_path / "srv").start()
    api = Api(server)
    agent = None
    try:
        agent_id, key = api.machine_with_key(organization="Acme", site="HQ")
        agent = AgentProcess(tmp_path / "agent", x_display.display, "--server", server.url,
                             "--key", key)
        first = api.live_session(agent_id)
        server.stop()
        time.sleep(1.0)
        server.start()
        api.close()
        api = Api(server)
        second = api.live_session(agent_id, within=30)
        assert second["id"] != first["id"]
        assert agent.process.poll() is None
        machines = [m for m in api.get("/api/machines").json() if m["agent_id"] == agent_id]
        assert len(machines) == 1
        assert machines[0]["status"] == "online" and machines[0]["organization"] == "Acme"
        assert "reconnecting in" in agent.output()
    finally:
        if agent is not None:
            agent.stop()
        api.close()
        server.stop()

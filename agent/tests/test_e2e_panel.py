"""End session in the attended agent's panel, pressed through the X display: every viewer's
session ends, the server audits it as ended by the end user, and the agent stops."""

from __future__ import annotations

import subprocess

import anyio
import httpx
import pytest
from remote_server.testing.liveserver import eventually
from remote_server.testing.processes import AgentProcess, Api, ServerProcess
from remote_viewer.client import open_viewer

from remote_core.types import ENDED_BY_END_USER

pytestmark = [pytest.mark.xvfb, pytest.mark.slow]

DIALOG = "Remote support request"
PANEL = "Remote support session"


def _window(env: dict[str, str], title: str) -> str:
    found = subprocess.run(["xdotool", "search", "--sync", "--onlyvisible", "--name", title],
                           env=env, check=True, capture_output=True, text=True, timeout=20)
    return found.stdout.split()[0]


def _press(env: dict[str, str], title: str, keys: str) -> None:
    subprocess.run(["xdotool", "windowfocus", "--sync", _window(env, title), "key", keys],
                   env=env, check=True, timeout=10)


def _technician(server, api: Api, name: str) -> httpx.Client:
    password = f"{name}-password-for-tests"
    created = api.post("/api/users", json={"username": name, "password": password,
                                           "role": "technician", "client_access": ["*"],
                                           "permissions": ["view"]})
    assert created.status_code == 201, created.text
    client = httpx.Client(base_url=server.url, timeout=15)
    r = client.post("/api/auth/login", json={"username": name, "password": password})
    r.raise_for_status()
    client.headers["Authorization"] = f"Bearer {r.json()['access_token']}"
    return client


@pytest.mark.anyio
async def test_end_session_in_the_panel_ends_it_for_every_viewer(tmp_path, server, api,
                                                                  x_display):
    env = x_display.env()
    agent = AgentProcess(tmp_path / "agent", x_display.display, "--server", server.url,
                         "--code", api.support_code())
    second = _technician(server, api, "panel-second")
    try:
        pending = api.live_session(consent="pending")
        _press(env, DIALOG, "alt+a")
        live = api.live_session(pending["agent_id"], consent="granted")
        _window(env, PANEL)  # shown for the whole attended session
        token_path = f"/api/sessions/{live['id']}/viewer-token"

        def said(connected: str) -> bool:
            return f"[connected now] {connected}\n" in agent.output()

        async with open_viewer(server.url, api.viewer_token(live["id"])) as first:
            await first.next_frame(15)
            await eventually(lambda: said("admin (view and control)"), 15)
            asked = second.post(token_path)
            assert asked.status_code == 409, asked.text
            _press(env, DIALOG, "alt+a")  # the second technician's own question
            await eventually(lambda: second.post(token_path).status_code == 200, 15)
            async with open_viewer(server.url, second.post(token_path).json()["token"]) as other:
                await other.next_frame(15)
                await eventually(lambda: said("admin (view and control), panel-second (view)"),
                                 15)
                _press(env, PANEL, "alt+e")  # End session
                # At once (no timer stands between the button and the Disconnect); the
                # bound only keeps a broken run from hanging, timings are benchmarks' job.
                with anyio.fail_after(15):
                    for viewer in (first, other):
                        _, goodbye = await viewer.receive("disconnect")
                        assert goodbye.reason == ENDED_BY_END_USER
        assert agent.wait(15) == 0  # capture and input stopped with the process
        assert "ended by the end user" in agent.output()
        events = api.get("/api/events", params={"session_id": live["id"]}).json()
        closed = [e for e in events if e["kind"] == "session.closed"]
        assert closed and closed[0]["detail"]["reason"] == ENDED_BY_END_USER
        ended = [s for s in api.get("/api/sessions").json() if s["id"] == live["id"]]
        assert ended[0]["end_reason"] == ENDED_BY_END_USER
    finally:
        second.close()
        agent.stop()


POLICIES = {
    "policy on": ({"session_panel_managed": True}, True),
    "on for the machine's organization": ({"session_panel_organizations": "Acme"}, True),
    "on for another organization": ({"session_panel_organizations": "Globex,Initech"}, False),
    "policy off": ({}, False),
    "recorded with a notice": ({"recordings": "notice"}, True),
}


@pytest.fixture(params=list(POLICIES), ids=list(POLICIES))
def panel_policy(request: pytest.FixtureRequest, tmp_path):
    """A server whose policy shows managed machines' end users the panel (for every
    organization or for some, or because it records with a notice), or not (shipped); the
    machine is Acme's."""
    settings, shown = POLICIES[request.param]
    process = ServerProcess(tmp_path / "server", **settings)
    yield process.start(), shown, "recordings" in settings
    process.stop()


def _shown(env: dict[str, str], title: str) -> bool:
    found = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", title], env=env,
                           check=False, capture_output=True, text=True, timeout=20)
    return bool(found.stdout.split())


@pytest.mark.anyio
async def test_a_managed_agent_shows_the_panel_as_the_servers_policy_says(tmp_path, panel_policy,
                                                                          x_display):
    server, policy, recorded = panel_policy
    api = Api(server)
    env = x_display.env()
    agent_id, key = api.machine_with_key(organization="Acme")
    agent = AgentProcess(tmp_path / "agent", x_display.display, "--server", server.url,
                         "--key", key)
    try:
        live = api.live_session(agent_id)
        assert not _shown(env, PANEL)  # nobody is connected yet
        async with open_viewer(server.url, api.viewer_token(live["id"])) as viewer:
            await viewer.next_frame(15)  # the agent had its StartStream before this
            if policy:
                _window(env, PANEL)
                # a recording runs while the technician watches, and the panel says so
                said = "; This session is being recorded." if recorded else ""
                await eventually(lambda: f"session panel shows: admin: views and controls{said}\n"
                                 in agent.output(), 15)
            else:
                # the panel opens in the StartStream handler, before the first frame: none
                assert not _shown(env, PANEL)
                assert "session panel" not in agent.output()
                assert "[connected now] admin" not in agent.output()  # nor told who
        if policy:  # only while a technician is connected
            await eventually(lambda: not _shown(env, PANEL), 15)
    finally:
        agent.stop()
        api.close()

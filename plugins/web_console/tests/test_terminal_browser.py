"""The backstage terminal end to end: the console's terminal page in a real Chromium (xterm.js,
under the shipped CSP), a real server process and a real agent process under Xvfb, whose
shell runs on a real pseudo-terminal on this machine.

Every page error, console error or CSP violation fails the test
(:func:`~remote_core.testing.browser.watched_context`). Commands are typed into xterm.js
as a technician types them, and their output is read off xterm.js's own buffer.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from remote_server.testing.processes import ADMIN_PASSWORD, AgentProcess, Api, ServerProcess

from remote_core.testing.browser import log_in, wait_until, watched_context
from remote_core.testing.xvfb import Xvfb, xvfb

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.xvfb]

DOCS = Path(__file__).resolve().parents[3] / "docs"

TECH_PASSWORD = "no-backstage-tech-pass"


@pytest.fixture(scope="module")
def display() -> Iterator[Xvfb]:
    with xvfb(640, 480, set_display=False) as server:
        yield server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path_factory.mktemp("terminal-server")).start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def admin(server: ServerProcess) -> Iterator[Api]:
    api = Api(server)
    yield api
    api.close()


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory, display: Xvfb, server: ServerProcess,
            admin: Api) -> Iterator[tuple[str, AgentProcess]]:
    """A managed agent's live session: (session id, the agent)."""
    agent_id, key = admin.machine_with_key(organization="acme")
    agent = AgentProcess(tmp_path_factory.mktemp("agent"), display.display,
                         "--server", server.url, "--key", key,
                         REMOTE_AGENT_BACKSTAGE_SHELL="/bin/bash")
    try:
        live = admin.live_session(agent_id)
        yield live["id"], agent
    finally:
        agent.stop()


def open_terminal(page: Any, session_id: str) -> Any:
    """The terminal page of ``session_id``, opened from the logged-in console ``page`` (a tab
    it opens gets a copy of its sessionStorage, where the login token is)."""
    with page.expect_popup() as popup:
        page.evaluate("(id) => window.open(`./terminal.html?session=${id}`)", session_id)
    return popup.value


def screen(page: Any) -> str:
    return "\n".join(page.evaluate("window.remoteTerminal.lines()"))


def run(page: Any, command: str, expect: str) -> re.Match[str]:
    """Type ``command`` into the terminal; wait for ``expect`` (a pattern) on its screen."""
    page.keyboard.type(command)
    page.keyboard.press("Enter")
    return wait_until(lambda: re.search(expect, screen(page)), timeout=20,
                      what=lambda: f"{expect!r} on the terminal; it shows:\n{screen(page)}")


def geometry(page: Any) -> tuple[int, int]:
    size = page.evaluate("[window.remoteTerminal.term.rows, window.remoteTerminal.term.cols]")
    return int(size[0]), int(size[1])


def group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def events(admin: Api, session_id: str) -> list[dict[str, Any]]:
    r = admin.get("/api/events", params={"session_id": session_id, "limit": 200})
    r.raise_for_status()
    body = r.json()
    return list(body["items"] if isinstance(body, dict) else body)


def test_a_terminal_runs_commands_resizes_copies_pastes_and_ends_its_shell(
        browser: Any, server: ServerProcess, admin: Api,
        session: tuple[str, AgentProcess]) -> None:
    session_id, _agent = session
    with watched_context(browser, viewport={"width": 1000, "height": 700}) as context:
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
        page = context.new_page()
        log_in(page, server.url, "admin", ADMIN_PASSWORD)
        page.click("nav >> text=Machines")
        with page.expect_popup() as popup:
            page.click(".open-terminal")
        term = popup.value
        term.wait_for_selector("#state[data-state=connected]", timeout=30_000)
        term.click("#terminal")
        # UTF-8 both ways, and the geometry xterm.js fitted to the page
        run(term, "echo grüße-$((6*7))", r"(?m)^grüße-42")
        rows, cols = geometry(term)
        run(term, "stty size", rf"(?m)^{rows} {cols}\s*$")
        # truecolor: xterm.js styles such a cell itself, within the CSP (build.mjs)
        run(term, r"printf '\033[38;2;255;100;0mtrue-%s\033[0m\n' colour", r"(?m)^true-colour")
        colours = """() => [...document.querySelectorAll(".xterm-rows span")]
            .filter((s) => s.textContent.includes("true-colour"))
            .map((s) => getComputedStyle(s).color)"""
        # the buffer holds the text before the next animation frame draws it
        wait_until(lambda: "rgb(255, 100, 0)" in term.evaluate(colours),
                   what=lambda: f"the truecolor cell drawn; spans: {term.evaluate(colours)}")
        term.screenshot(path=str(DOCS / "backstage-terminal.png"))  # for the README
        # a smaller window: xterm.js refits once (a terminal that sized its own column
        # would shrink step by step), and the shell hears the new size
        term.evaluate("""() => { window.refits = [];
            window.remoteTerminal.term.onResize((size) => window.refits.push(size)); }""")
        term.set_viewport_size({"width": 700, "height": 450})
        def refitted() -> tuple[int, int] | None:
            now = geometry(term)
            shown = term.inner_text("#size")
            wanted = f"{now[1]}\N{MULTIPLICATION SIGN}{now[0]}"
            return now if now != (rows, cols) and shown == wanted else None

        smaller = wait_until(refitted, what=lambda: f"xterm.js refitting: {geometry(term)}, "
                                                    f"shown {term.inner_text('#size')!r}")
        assert smaller[0] < rows and smaller[1] < cols
        run(term, "true", r"(?m)^\S*# true\s*$")  # a round trip after the refit
        assert term.evaluate("window.refits.length") == 1, term.evaluate("window.refits")
        run(term, "clear; stty size", rf"(?m)^{smaller[0]} {smaller[1]}\s*$")
        # copy a selection, paste it back as input
        run(term, "clear; echo copy-me-$((40+2))", r"(?m)^copy-me-42")
        term.evaluate("""() => { const t = window.remoteTerminal.term;
            const y = window.remoteTerminal.lines().findIndex((l) => l.startsWith("copy-me-42"));
            t.select(0, y, "copy-me-42".length); }""")
        term.click("#copy")
        wait_until(lambda: term.inner_text("#notice") == "Copied.")
        assert term.evaluate("navigator.clipboard.readText()") == "copy-me-42"
        term.evaluate("navigator.clipboard.writeText('echo pasted-$((1+1))')")
        term.click("#paste")
        # the paste is on the command line (and the terminal has the focus back) before Enter
        wait_until(lambda: "echo pasted-$((1+1))" in screen(term), what="the pasted text")
        term.keyboard.press("Enter")
        wait_until(lambda: re.search(r"(?m)^pasted-2", screen(term)),
                   what=lambda: f"the pasted command's output; the terminal shows:\n{screen(term)}")
        # the shell's process group, and a job in a group of its own
        shell = int(run(term, "echo shell=$$", r"shell=(\d+)").group(1))
        job = int(run(term, "sleep 600 & echo job=$!", r"job=(\d+)").group(1))
        assert os.getpgid(shell) == shell and os.getsid(job) == shell
        term.click("#leave")
        term.wait_for_selector("#state[data-state=ended]")
        wait_until(lambda: group_gone(shell) and group_gone(job), timeout=15,
                   what="the shell's process group and its job to be gone")
    kinds = wait_until(lambda: (k := [e["kind"] for e in events(admin, session_id)])
                       .count("backstage.closed") and k, what="backstage.closed audited")
    rows_ = [e for e in events(admin, session_id) if e["kind"].startswith("backstage.")]
    assert {e["kind"] for e in rows_} == {"backstage.opened", "backstage.closed"}
    assert all(e["actor"] == "admin" for e in rows_)
    assert "viewer.token_issued" in kinds


def test_the_shell_ends_with_the_technician_or_the_agent(
        browser: Any, server: ServerProcess, admin: Api, display: Xvfb,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    agent_id, key = admin.machine_with_key(organization="acme")
    agent = AgentProcess(tmp_path_factory.mktemp("agent-gone"), display.display,
                         "--server", server.url, "--key", key)
    try:
        session_id = admin.live_session(agent_id)["id"]
        with watched_context(browser) as context:
            page = context.new_page()
            log_in(page, server.url, "admin", ADMIN_PASSWORD)
            # the technician's tab closes (no Leave): the socket drops, the shell goes
            gone = open_terminal(page, session_id)
            gone.wait_for_selector("#state[data-state=connected]", timeout=30_000)
            gone.click("#terminal")
            first = int(run(gone, "echo shell=$$", r"shell=(\d+)").group(1))
            gone.close()
            wait_until(lambda: group_gone(first), timeout=15, what="the first shell to be gone")
            # the agent stops
            term = open_terminal(page, session_id)
            term.wait_for_selector("#state[data-state=connected]", timeout=30_000)
            term.click("#terminal")
            shell = int(run(term, "echo shell=$$", r"shell=(\d+)").group(1))
            agent.stop()
            term.wait_for_selector("#state[data-state=ended]", timeout=20_000)
            wait_until(lambda: group_gone(shell), timeout=15, what="the shell to be gone")
    finally:
        agent.stop()


def test_a_technician_without_the_permission_is_refused_clearly(
        browser: Any, server: ServerProcess, admin: Api,
        session: tuple[str, AgentProcess]) -> None:
    session_id, _agent = session
    name = f"tech-{uuid.uuid4().hex[:6]}"
    r = admin.post("/api/users", json={"username": name, "password": TECH_PASSWORD,
                                       "role": "technician", "permissions": ["view", "control"]})
    r.raise_for_status()
    admin.put(f"/api/users/{r.json()['id']}/client-access",
              json={"organizations": ["*"]}).raise_for_status()
    # the browser logs the refused request (403) as a console error: that one is expected
    with watched_context(browser, allow=("status of 403",)) as context:
        page = context.new_page()
        log_in(page, server.url, name, TECH_PASSWORD)
        page.click("nav >> text=Machines")
        page.wait_for_selector(".open-viewer")
        assert page.locator(".open-terminal").count() == 0  # not offered
        term = open_terminal(page, session_id)
        term.wait_for_selector("#state[data-state=refused]", timeout=20_000)
        assert term.inner_text("#state") == (
            "Cannot open a terminal: a backstage terminal needs the 'backstage' permission")
    token = httpx.post(f"{server.url}/api/auth/login",
                       json={"username": name, "password": TECH_PASSWORD}).json()["access_token"]
    r = httpx.post(f"{server.url}/api/sessions/{session_id}/viewer-token",
                   params={"backstage": "true"}, headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 403
    assert r.headers["content-type"].startswith("application/problem+json")


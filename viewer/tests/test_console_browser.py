"""The console and the browser viewer in a real Chromium, against a real server and agent.

Log in, create a support code, start a real agent under Xvfb with it, grant
consent in the agent's dialog, see the agent's screen in the canvas (pixel
check of a known pattern), click to move the real X pointer, and see that a
view-only technician cannot. Screenshots land in docs/ for the README.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from remote_core.testing.processes import ADMIN_PASSWORD, AgentProcess, Api, ServerProcess
from remote_core.testing.xvfb import Painter, Xvfb, xvfb

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.xvfb]

DOCS = Path(__file__).resolve().parents[2] / "docs"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
DIALOG = "Remote support request"
WIDTH, HEIGHT = 800, 600
# A known pattern on the agent's screen: (x, y, w, h, 0xRRGGBB).
PATTERN = [
    (0, 0, WIDTH, HEIGHT, 0x203040),
    (100, 100, 200, 150, 0xFF0000),
    (450, 100, 200, 150, 0x00FF00),
    (100, 350, 200, 150, 0x0000FF),
    (450, 350, 200, 150, 0xFFFFFF),
]
TECH_PASSWORD = "view-only-tech-pass"


@pytest.fixture(scope="module")
def display() -> Iterator[Xvfb]:
    with xvfb(WIDTH, HEIGHT, set_display=False) as server:
        yield server


def paint_pattern(display: Xvfb) -> None:
    """Draw the pattern on the root window (after the consent dialog is gone: an
    unmapped window exposes the root's plain background)."""
    painter = Painter(display.display)
    try:
        for x, y, w, h, rgb in PATTERN:
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
def browser() -> Iterator[Any]:
    playwright = pytest.importorskip("playwright.sync_api")
    assert Path(CHROMIUM).exists(), "Chromium is missing: scripts/bootstrap installs it"
    with playwright.sync_playwright() as p:
        instance = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=CHROMIUM_ARGS)
        yield instance
        instance.close()


def log_in(page: Any, server: ServerProcess, username: str, password: str) -> None:
    page.goto(f"{server.url}/console/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_selector("nav .who")


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


def click_remote(page: Any, x: int, y: int) -> None:
    px, py = page.evaluate(CANVAS_POINT, [x, y])
    page.mouse.click(px, py)


PIXEL_NEAR = ("([x, y, expected, tolerance]) => (" + CANVAS_PIXEL + ")([x, y])"
              ".every((v, i) => Math.abs(v - expected[i]) <= tolerance)")


def wait_for_screen(page: Any, tolerance: int = 0) -> None:
    """Every block of the pattern shows in the canvas, exactly (raw) or within
    ``tolerance`` per channel (lossy codecs)."""
    page.wait_for_function(
        f"window.remoteViewer && window.remoteViewer.width === {WIDTH}", timeout=30_000)
    for x, y, w, h, rgb in PATTERN[1:]:
        expected = [(rgb >> 16) & 255, (rgb >> 8) & 255, rgb & 255]
        page.wait_for_function(PIXEL_NEAR, arg=[x + w // 2, y + h // 2, expected, tolerance],
                               timeout=30_000)


def test_code_consent_view_control_and_view_only(tmp_path: Path, display: Xvfb,
                                                 server: ServerProcess, browser: Any) -> None:
    DOCS.mkdir(exist_ok=True)
    context = browser.new_context(viewport={"width": 1280, "height": 800}, bypass_csp=True)
    page = context.new_page()
    log_in(page, server, "admin", ADMIN_PASSWORD)

    page.click("nav >> text=Support codes")
    page.click("#create-code")
    code = page.inner_text("#big-code").strip()
    assert len(code) == 11 and code[3] == "-" and code[7] == "-"

    agent = AgentProcess(tmp_path / "agent", display.display, "--server", server.url,
                         "--code", code)
    try:
        page.wait_for_selector("#code-state >> text=Waiting for consent", timeout=30_000)
        page.screenshot(path=str(DOCS / "console-support-code.png"))
        press_in_dialog(display, "alt+a")
        page.wait_for_selector("#code-state >> text=Connected", timeout=30_000)
        paint_pattern(display)

        with page.expect_popup() as popup:
            page.click("#current-code .open-viewer")
        viewer = popup.value
        viewer.wait_for_selector("#state >> text=Connected")
        wait_for_screen(viewer, tolerance=12)  # the agent's default codec, through WebCodecs
        viewer.select_option("#codec", "1")  # raw + Zstandard: decoded in the page, exact
        viewer.wait_for_function("window.remoteViewer.rawFrames > 0", timeout=30_000)
        wait_for_screen(viewer)

        # A dropped socket: the viewer mints a fresh token, reconnects and draws again.
        drawn = viewer.evaluate("window.remoteViewer.drawn")
        viewer.evaluate("window.remoteViewer.ws.close(4000, 'network dropped')")
        viewer.wait_for_selector("#state >> text=reconnecting", timeout=10_000)
        viewer.wait_for_selector("#state >> text=Connected", timeout=30_000)
        viewer.wait_for_function(f"window.remoteViewer.drawn > {drawn}", timeout=30_000)

        click_remote(viewer, 612, 437)
        viewer.wait_for_timeout(300)
        assert _pointer_reaches(display, (612, 437))
        viewer.screenshot(path=str(DOCS / "viewer.png"))

        page.click("nav >> text=Machines")
        page.wait_for_selector("#machines tr[data-agent-id] >> text=online")
        page.screenshot(path=str(DOCS / "console-machines.png"))

        _view_only_technician_cannot_move_the_pointer(browser, server, display, viewer)
    finally:
        agent.stop()
        context.close()


def _pointer_reaches(display: Xvfb, target: tuple[int, int], tries: int = 50) -> bool:
    for _ in range(tries):
        if pointer(display) == target:
            return True
        subprocess.run(["sleep", "0.1"], check=True)
    return False


def _view_only_technician_cannot_move_the_pointer(browser: Any, server: ServerProcess,
                                                   display: Xvfb, admin_viewer: Any) -> None:
    api = Api(server)
    try:
        created = api.post("/api/users", json={
            "username": "viewer-tech", "password": TECH_PASSWORD, "role": "technician",
            "permissions": ["view"], "client_access": ["*"]})
        assert created.status_code == 201, created.text
    finally:
        api.close()
    session_id = admin_viewer.evaluate("new URLSearchParams(location.search).get('session')")
    context = browser.new_context(viewport={"width": 1280, "height": 800}, bypass_csp=True)
    try:
        page = context.new_page()
        log_in(page, server, "viewer-tech", TECH_PASSWORD)
        page.goto(f"{server.url}/console/viewer.html?session={session_id}")
        wait_for_screen(page, tolerance=12)
        page.wait_for_selector("#state >> text=view only")
        before = pointer(display)
        # Even a tampered page that sends input is refused by the server.
        page.evaluate("window.remoteViewer.viewOnly = false")
        click_remote(page, 150, 150)
        page.mouse.move(10, 10)
        page.wait_for_timeout(1000)
        assert pointer(display) == before
    finally:
        context.close()


def test_agent_reported_text_is_shown_as_text(server: ServerProcess, browser: Any) -> None:
    api = Api(server)
    try:
        markup = '<img src=x onerror="window.pwned=1"><b>bold</b>'
        created = api.post("/api/machines", json={"organization": markup, "site": "",
                                                  "tags": ["<i>t</i>"]})
        assert created.status_code == 201, created.text
    finally:
        api.close()
    context = browser.new_context(bypass_csp=True)  # text, not markup, even without the CSP
    try:
        page = context.new_page()
        log_in(page, server, "admin", ADMIN_PASSWORD)
        row = page.wait_for_selector(f"tr[data-agent-id='{created.json()['agent_id']}']")
        assert markup in row.inner_text()
        assert row.query_selector("img") is None and row.query_selector("b") is None
        assert page.evaluate("window.pwned") is None
    finally:
        context.close()


def test_console_is_served_with_a_strict_content_security_policy(server: ServerProcess) -> None:
    home = httpx.get(f"{server.url}/", timeout=10)
    assert home.status_code == 307 and home.headers["location"] == "/console/"
    response = httpx.get(f"{server.url}/console/", timeout=10)
    assert response.status_code == 200
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert 'src="viewer.js"' in httpx.get(f"{server.url}/console/viewer.html", timeout=10).text


def test_every_view_renders_and_admin_forms_work(server: ServerProcess, browser: Any) -> None:
    context = browser.new_context(bypass_csp=True)
    errors: list[str] = []
    try:
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        log_in(page, server, "admin", ADMIN_PASSWORD)
        for title in ("Machines", "Support codes", "Sessions", "Releases", "Users", "Audit log"):
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
        page.click("nav >> text=Audit log")
        page.wait_for_selector("td:text-is('release.created')")
        assert [e.inner_text() for e in page.query_selector_all("main .error")] == [""]
    finally:
        context.close()
    assert errors == []

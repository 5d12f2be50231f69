"""The end user's join page in a real Chromium, against a real server, under the shipped CSP.

Every page error, console error or CSP violation fails the test, except the
browser's own line for an answer the test provokes on purpose (a 404 for an
unknown code, a 429 for the lockout). The server hands out a real release
built by ``remote-support release build`` (setting ``join_agent_file``); the
download must be that release with the server's URL and the code inside.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from remote_server.cli import main as remote_support
from remote_server.testing.processes import ADMIN_PASSWORD, Api, ServerProcess

from remote_core.supportcode import masked
from remote_core.testing.browser import watched_context

pytestmark = [pytest.mark.slow, pytest.mark.browser]

DOCS = Path(__file__).resolve().parents[3] / "docs"
VIEWPORT = {"width": 900, "height": 700}
ORGANIZATION = "Example Help Desk"
REFUSED = ("status of 404", "status of 429")
"""What Chromium logs for the refusals these tests provoke on purpose."""


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("join-release") / "remote-agent.pyz"
    assert remote_support(["release", "build", "--version", "1.0.0", "--output",
                           str(target)]) == 0
    return target


def _server(workdir: Path, release: Path | None) -> ServerProcess:
    process = ServerProcess(workdir)
    process.env["REMOTE_SUPPORT_JOIN_ORGANIZATION"] = ORGANIZATION
    if release is not None:
        process.env["REMOTE_SUPPORT_JOIN_AGENT_FILE"] = str(release)
    return process.start()


@pytest.fixture
def server(tmp_path: Path, release: Path) -> Iterator[ServerProcess]:
    process = _server(tmp_path / "join-server", release)
    yield process
    process.stop()



def _code(server: ServerProcess) -> str:
    api = Api(server)
    try:
        return api.support_code()
    finally:
        api.close()


def test_a_code_typed_by_keyboard_names_the_technician_and_downloads_the_agent(
        browser: Any, server: ServerProcess, release: Path, tmp_path: Path) -> None:
    code = _code(server)
    with watched_context(browser, viewport=VIEWPORT, accept_downloads=True) as context:
        page = context.new_page()
        page.goto(f"{server.url}/join")
        assert page.evaluate("document.activeElement.id") == "join-code"
        assert page.get_by_label("Support code from your technician").count() == 1
        page.keyboard.type(code.replace("-", "").lower())
        page.keyboard.press("Enter")
        page.wait_for_selector("#join-found:not([hidden])")
        assert page.text_content("#join-technician") == "admin"
        assert ORGANIZATION in page.text_content("#join-found")
        page.screenshot(path=str(DOCS / "join-page.png"))
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.id") == "join-download"
        with page.expect_download() as waiting:
            page.keyboard.press("Enter")
        download = waiting.value
        assert download.suggested_filename == f"remote-support-{code}.pyz"
        saved = tmp_path / download.suggested_filename
        download.save_as(saved)
        page.wait_for_selector("#join-message:has-text('python3 remote-support-')")
    with zipfile.ZipFile(saved) as archive:
        inside = json.loads(archive.read("attended.json"))
        assert "__main__.py" in archive.namelist()
    assert inside == {"server": server.url, "code": code}
    with zipfile.ZipFile(release) as original:
        assert "attended.json" not in original.namelist()


def test_a_german_browser_gets_the_german_page(browser: Any, server: ServerProcess) -> None:
    """The browser's locale (its Accept-Language) chooses the catalogue: every word the
    page shows on the way to the download is German, under the shipped CSP."""
    code = _code(server)
    with watched_context(browser, viewport=VIEWPORT, locale="de-DE") as context:
        page = context.new_page()
        page.goto(f"{server.url}/join")
        page.wait_for_selector("html[lang=de]")
        assert page.title() == "An einer Fernwartungssitzung teilnehmen"
        assert page.text_content("h1") == "An einer Fernwartungssitzung teilnehmen"
        assert page.get_by_label("Support-Code von Ihrem Techniker").count() == 1
        assert page.text_content("#join-hint") == (
            "Neun Buchstaben und Ziffern, zum Beispiel ABC-DEF-GHJ.")
        assert page.text_content("#join-check") == "Weiter"
        page.press("#join-code", "Enter")  # nothing typed yet
        page.wait_for_selector("#join-message:has-text('Bitte geben Sie den Support-Code')")
        page.fill("#join-code", code)
        page.press("#join-code", "Enter")
        page.wait_for_selector("#join-found:not([hidden])")
        assert page.text_content("#join-found-title") == "Ihr Techniker"
        assert page.text_content("#join-download") == "Support-Programm herunterladen"
        assert "Administratorrechte" in page.text_content("#join-agent")


def test_the_messages_follow_accept_language(server: ServerProcess) -> None:
    """The catalogue by the browser's languages and their weights; English by default."""
    def language(header: str | None) -> str:
        headers = {"accept-language": header} if header is not None else {}
        r = httpx.get(f"{server.url}/join/messages.json", headers=headers, timeout=10)
        assert r.status_code == 200 and r.headers["vary"] == "accept-language"
        assert "default-src 'self'" in r.headers["content-security-policy"]
        return str(r.json()["lang"])

    assert language(None) == "en"
    assert language("de-DE,de;q=0.9,en;q=0.8") == "de"
    assert language("fr-FR,en;q=0.9,de;q=0.8") == "en"
    assert language("fr, de;q=0.5") == "de"
    assert language("en-GB, de") == "en"
    assert language("de;q=bad, xx") == "en"
    r = httpx.get(f"{server.url}/join/messages.json", headers={"accept-language": "de"})
    words = r.json()["messages"]
    assert words["Continue"] == "Weiter"
    assert httpx.post(f"{server.url}/join/messages.json").status_code == 405


def test_the_join_link_carries_the_code(browser: Any, server: ServerProcess) -> None:
    code = _code(server)
    with watched_context(browser, viewport=VIEWPORT) as context:
        page = context.new_page()
        page.goto(f"{server.url}/join/{code}")
        page.wait_for_selector("#join-found:not([hidden])")
        assert page.input_value("#join-code") == code
        assert page.text_content("#join-technician") == "admin"
        assert page.is_visible("#join-download")
        assert page.evaluate("location.pathname") == "/join"
    logged = server.log.read_text()
    assert f"/join/{masked(code)}" in logged and code not in logged


def test_an_unknown_code_gets_a_clear_message(browser: Any, server: ServerProcess) -> None:
    with watched_context(browser, viewport=VIEWPORT, allow=REFUSED) as context:
        page = context.new_page()
        page.goto(f"{server.url}/join/ABC-DEF-GHJ")
        page.wait_for_selector("#join-message:has-text('not valid')")
        assert page.is_hidden("#join-found")
        assert page.get_attribute("#join-code", "aria-invalid") == "true"
        assert "admin" not in page.content()


def test_the_lockout_holds_through_the_page(browser: Any, server: ServerProcess) -> None:
    """Ten wrong codes lock the address out (README, support codes): then even a good
    code is refused, with the lockout's message, and the download too."""
    good = _code(server)
    with watched_context(browser, viewport=VIEWPORT, allow=REFUSED) as context:
        page = context.new_page()
        page.goto(f"{server.url}/join")
        for _ in range(10):
            page.evaluate("document.getElementById('join-message').textContent = ''")
            page.fill("#join-code", "ABC-DEF-GHJ")
            page.press("#join-code", "Enter")
            page.wait_for_selector("#join-message:has-text('.')")
        page.fill("#join-code", good)
        page.press("#join-code", "Enter")
        page.wait_for_selector("#join-message:has-text('Too many attempts')")
        assert page.is_hidden("#join-found")
        answer = page.evaluate("""async (code) => (await fetch('/api/codes/agent', {method:
            'POST', headers: {'content-type': 'application/json'},
            body: JSON.stringify({code})})).status""", good)
        assert answer == 429


def test_without_an_agent_the_page_says_so(browser: Any, tmp_path: Path) -> None:
    server = _server(tmp_path / "no-agent", None)
    try:
        code = _code(server)
        with watched_context(browser, viewport=VIEWPORT) as context:
            page = context.new_page()
            page.goto(f"{server.url}/join/{code}")
            page.wait_for_selector("#join-no-agent")
            assert "No support program is available" in page.text_content("#join-no-agent")
            assert page.is_hidden("#join-download")
    finally:
        server.stop()


def test_the_codes_page_shows_the_join_link_and_its_qr_code(
        browser: Any, server: ServerProcess, tmp_path: Path) -> None:
    zbarimg = shutil.which("zbarimg")
    assert zbarimg, "zbarimg reads the QR code back: scripts/bootstrap installs zbar-tools"
    with watched_context(browser, viewport={"width": 1280, "height": 900}) as context:
        page = context.new_page()
        page.goto(f"{server.url}/console/")
        page.fill("input[name=username]", "admin")
        page.fill("input[name=password]", ADMIN_PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_selector("nav .who")
        page.click("nav >> text=Support codes")
        page.click("#create-code")
        page.wait_for_selector("#join-link")
        code = page.text_content("#big-code")
        link = f"{server.url}/join/{code}"
        assert page.text_content("#join-link") == link
        assert page.get_attribute("#join-link", "href") == link
        assert page.get_attribute("svg.qr", "aria-label") == f"QR code of the join link {link}"
        page.locator("svg.qr").screenshot(path=str(tmp_path / "qr.png"))
    read = subprocess.run([zbarimg, "--quiet", "--raw", str(tmp_path / "qr.png")],
                          capture_output=True, text=True, timeout=30, check=True)
    assert read.stdout.strip() == link

"""The file-transfer page end to end: the console's files page in a real Chromium (under the
shipped CSP), a real server process and a real managed agent process under Xvfb, whose file
root is a temporary directory of this test.

Files go up through the page's pickers and a drop onto its listing, and come down as the
browser's downloads; what lands on either side is compared by SHA-256. A socket the page
drops mid-transfer (its test hook closes the WebSocket as a lost network would: the server
sees the viewer go and the agent keeps the partial upload) is reconnected with a new token
and the transfers resume where the agent has them. Every page error, console error or CSP
violation fails the test (:func:`~remote_core.testing.browser.watched_context`).
"""

from __future__ import annotations

import hashlib
import os
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from remote_server.testing.liveserver import fresh_ip
from remote_server.testing.processes import ADMIN_PASSWORD, AgentProcess, Api, ServerProcess

from remote_core.testing.browser import log_in, wait_until, watched_context
from remote_core.testing.xvfb import Xvfb, xvfb

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.xvfb]

DOCS = Path(__file__).resolve().parents[3] / "docs"
MiB = 1024 * 1024
WINDOW = 8 * MiB
TECH_PASSWORD = "no-files-tech-password"


@pytest.fixture(scope="module")
def display() -> Iterator[Xvfb]:
    with xvfb(640, 480, set_display=False) as server:
        yield server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    # Each test's browser speaks from an address of its own (X-Forwarded-For, trusted from
    # 127.0.0.1), so the shipped login limit (8/min/IP) holds and the tests' logins together
    # do not reach it.
    process = ServerProcess(tmp_path_factory.mktemp("files-server"),
                            trusted_proxies="127.0.0.1").start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def admin(server: ServerProcess) -> Iterator[Api]:
    api = Api(server)
    yield api
    api.close()


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The agent's one file root: a folder with a file, a subfolder, and two symlinks that
    lead out of the root (which the agent must refuse to follow)."""
    shared = tmp_path_factory.mktemp("shared")
    (shared / "docs").mkdir()
    (shared / "docs" / "readme.txt").write_text("read me\n")
    (shared / "notes.txt").write_text("hello from the agent\n")
    os.chmod(shared / "notes.txt", 0o640)
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.txt").write_text("not yours\n")
    (shared / "escape").symlink_to(outside)
    (shared / "secret-link.txt").symlink_to(outside / "secret.txt")
    return shared


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory, display: Xvfb, server: ServerProcess,
            admin: Api, root: Path) -> Iterator[str]:
    """A managed agent's live session (its id), the agent serving ``root``."""
    agent_id, key = admin.machine_with_key(organization="acme")
    agent = AgentProcess(tmp_path_factory.mktemp("agent"), display.display,
                         "--server", server.url, "--key", key,
                         REMOTE_AGENT_FILE_ROOTS=str(root))
    try:
        yield admin.live_session(agent_id)["id"]
    finally:
        agent.stop()


def own_address() -> dict[str, Any]:
    """Browser context options: its requests come from an address of their own."""
    return {"extra_http_headers": {"X-Forwarded-For": fresh_ip()}}


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(MiB):
            digest.update(block)
    return digest.hexdigest()


def random_file(path: Path, size: int) -> Path:
    with path.open("wb") as f:
        for at in range(0, size, 4 * MiB):
            f.write(os.urandom(min(4 * MiB, size - at)))
    return path


def tree(directory: Path) -> dict[str, str]:
    """Every file below ``directory`` by its relative path, with its SHA-256."""
    return {p.relative_to(directory).as_posix(): sha256_file(p)
            for p in sorted(directory.rglob("*")) if p.is_file()}


def open_files(page: Any, session_id: str) -> Any:
    """The files page of ``session_id``, opened from the logged-in console ``page`` (a tab it
    opens gets a copy of its sessionStorage, where the login token is), once connected."""
    with page.expect_popup() as popup:
        page.evaluate("(id) => window.open(`./files.html?session=${id}`)", session_id)
    files = popup.value
    files.wait_for_selector("#state[data-state=connected]", timeout=30_000)
    return files


def go(files: Any, path: str) -> None:
    """Show the folder at ``path`` through the page's path box."""
    files.fill("#path", path)
    files.click("#path-form button")
    wait_until(lambda: files.evaluate("window.remoteFiles.state.cwd") == path
               and files.input_value("#path") == path,
               what=lambda: (f"the listing of {path}: the page shows "
                             f"{files.evaluate('window.remoteFiles.state.cwd')!r}, "
                             f"{files.get_attribute('#state', 'data-state')}, "
                             f"saying {files.inner_text('#error')!r}"))


def names(files: Any) -> list[str]:
    return list(files.eval_on_selector_all("#entries tr[data-name]",
                                           "(rows) => rows.map((r) => r.dataset.name)"))


def transfers(files: Any) -> list[dict[str, Any]]:
    return list(files.evaluate("window.remoteFiles.transfers()"))


def settled(files: Any, count: int, timeout: float = 180) -> list[dict[str, Any]]:
    """Wait until the page has ``count`` transfers and none is queued or moving."""
    def done() -> list[dict[str, Any]] | None:
        now = transfers(files)
        busy = [t for t in now if t["state"] in ("queued", "running", "verifying")]
        return now if len(now) == count and not busy else None

    return wait_until(done, timeout=timeout,
                      what=lambda: f"{count} transfers to end; they are: {transfers(files)}")


def drop(files: Any, paths: list[Path]) -> None:
    """Drag ``paths`` (files and folders of this machine) from outside the browser and drop
    them onto the listing, as a technician does from a file manager: Chromium's own drag
    and drop (DevTools' Input.dispatchDragEvent), whose folders the page walks with
    webkitGetAsEntry()."""
    hint = files.locator("#drop .drop-hint")  # inside the drop zone, never redrawn
    hint.scroll_into_view_if_needed()
    box = hint.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    cdp = files.context.new_cdp_session(files)
    data = {"items": [], "files": [str(p) for p in paths], "dragOperationsMask": 1}
    for kind in ("dragEnter", "dragOver", "drop"):
        cdp.send("Input.dispatchDragEvent", {"type": kind, "x": x, "y": y, "data": data})
    cdp.detach()


def test_browse_upload_and_download_files_and_folders(
        browser: Any, server: ServerProcess, admin: Api, session: str, root: Path,
        tmp_path: Path) -> None:
    big = random_file(tmp_path / "big.bin", 50 * MiB)
    local = tmp_path / "local" / "project"
    for rel, size in {"a.txt": 10, "src/main.bin": 300_000, "src/lib/deep.bin": 1 * MiB + 7,
                      "src/lib/empty.txt": 0, "docs/guide.txt": 2000}.items():
        (local / rel).parent.mkdir(parents=True, exist_ok=True)
        random_file(local / rel, size)
    dropped = tmp_path / "to-drop" / "drop-tree"
    (dropped / "empty" / "inside").mkdir(parents=True)
    random_file(dropped / "one.bin", 5000)
    (dropped / "sub").mkdir()
    random_file(dropped / "sub" / "two.bin", 3 * MiB)
    loose = random_file(tmp_path / "to-drop" / "loose.txt", 100)
    top = root.name
    with watched_context(browser, viewport={"width": 1200, "height": 800},
                         accept_downloads=True, **own_address()) as context:
        page = context.new_page()
        log_in(page, server.url, "admin", ADMIN_PASSWORD)
        page.click("nav >> text=Machines")
        with page.expect_popup() as popup:
            page.click(".open-files")
        files = popup.value
        files.wait_for_selector("#state[data-state=connected]", timeout=30_000)
        # "/" lists the roots; a root opens by its name
        wait_until(lambda: names(files) == [top], what=lambda: f"the root; shown {names(files)}")
        files.click(f'#entries tr[data-name="{top}"] .entry-open')
        wait_until(lambda: names(files) == ["docs", "escape", "notes.txt", "secret-link.txt"],
                   what=lambda: f"the root's entries; shown {names(files)}")
        notes = files.locator('#entries tr[data-name="notes.txt"] td')
        assert notes.nth(1).inner_text() == "21 B"
        assert notes.nth(3).inner_text() == "-rw-r-----"
        assert files.inner_text('#entries tr[data-name="docs"] td:nth-child(4)').startswith("d")
        files.click('#entries tr[data-name="docs"] .entry-open')
        wait_until(lambda: names(files) == ["readme.txt"], what="docs/ listed")
        assert files.eval_on_selector_all("#crumbs .crumb", "(b) => b.map((x) => x.textContent)") \
            == ["Roots", top, "docs"]
        files.click(f'#crumbs .crumb[data-path="/{top}"]')
        wait_until(lambda: "notes.txt" in names(files), what="back at the root by the breadcrumb")

        # a new folder, then uploads: a 50 MB file by the picker, a folder of folders by the
        # directory picker, a folder and a file dropped onto the listing
        files.fill("#folder-name", "made here")
        files.click("#mkdir-form button")
        wait_until(lambda: "made here" in names(files), what="the new folder listed")
        assert (root / "made here").is_dir()
        files.set_input_files("#pick-files", str(big))
        files.set_input_files("#pick-folder", str(local))
        wait_until(lambda: "project" in names(files), what="the picked folder made")
        drop(files, [dropped, loose])
        wait_until(lambda: len(transfers(files)) == 9,
                   what=lambda: f"9 uploads: {transfers(files)}")
        def under_way() -> bool:  # as the page shows it
            shown = files.eval_on_selector_all("#transfers progress",
                                               "(bars) => bars.map((p) => p.value)")
            return len(shown) == 9 and shown[0] > 10 * MiB

        wait_until(under_way, what=lambda: f"the big upload under way: {transfers(files)}")
        files.screenshot(path=str(DOCS / "file-transfer.png"))  # for the README
        ups = settled(files, 9)
        assert all(t["state"] == "done" for t in ups), ups
        # two at a time, the rest queued
        assert files.evaluate("window.remoteFiles.state.mostActive") == 2
        assert max(t["maxOutstanding"] for t in ups) <= WINDOW
        assert sha256_file(root / "big.bin") == sha256_file(big)
        assert tree(root / "project") == tree(local)
        assert tree(root / "drop-tree") == tree(dropped)
        assert (root / "drop-tree" / "empty" / "inside").is_dir()  # folders with no files too
        assert (root / "loose.txt").read_bytes() == loose.read_bytes()
        assert not [p for p in root.rglob("*") if p.name.startswith(".") and p.is_file()], \
            "a partial upload was left behind"
        wait_until(lambda: {"big.bin", "project", "drop-tree", "loose.txt"} <= set(names(files)),
                   what=lambda: f"the uploads listed: {names(files)}")

        # downloads: the big file, and the folder as a zip
        with files.expect_download(timeout=120_000) as got:
            files.click('#entries tr[data-name="big.bin"] .download')
        assert got.value.suggested_filename == "big.bin"
        assert sha256_file(Path(got.value.path())) == sha256_file(big)
        # kept in the browser and saved from it (a folder goes straight to a file the
        # technician picks where the browser can: the streaming test's way)
        files.evaluate("window.remoteFiles.streamFrom = Infinity")
        with files.expect_download(timeout=60_000) as got:
            files.click('#entries tr[data-name="project"] .download')
        assert got.value.suggested_filename == "project.zip"
        unpacked = tmp_path / "unpacked"
        with zipfile.ZipFile(got.value.path()) as archive:
            archive.extractall(unpacked)
        assert tree(unpacked) == tree(local)
        downs = settled(files, 11)[9:]
        assert [t["state"] for t in downs] == ["done", "done"], downs
        # what arrived is acknowledged promptly (each MiB, and on a short timer)
        assert max(t["maxUnacked"] for t in downs) <= MiB + 256 * 1024, downs

        # the viewer's Files button opens this page for its session
        with page.expect_popup() as popup:
            page.evaluate("(id) => window.open(`./viewer.html?session=${id}`)", session)
        viewer = popup.value
        with viewer.expect_popup() as popup:
            viewer.click("#files")
        assert popup.value.url.endswith(f"/files.html?session={session}")
        popup.value.wait_for_selector("#state[data-state=connected]", timeout=30_000)
        popup.value.close()
        viewer.click("#leave")

    def transfers_audited() -> list[dict[str, Any]] | None:
        found = [e for e in admin.events(session)
                 if e["kind"] in ("file.uploaded", "file.downloaded")]
        return found if len(found) >= 9 else None

    rows = wait_until(transfers_audited, what="the transfers audited")
    def audited(kind: str, path: str) -> dict[str, Any]:
        found = [e for e in rows if e["kind"] == kind and e["detail"].get("path") == path]
        assert found, f"no {kind} of {path} in {rows}"
        return found[0]

    up = audited("file.uploaded", f"/{top}/big.bin")
    assert up["actor"] == "admin"
    assert up["detail"]["size"] == 50 * MiB and up["detail"]["sha256"] == sha256_file(big)
    down = audited("file.downloaded", f"/{top}/big.bin")
    assert down["detail"]["sha256"] == sha256_file(big)
    audited("file.uploaded", f"/{top}/project/src/lib/deep.bin")
    audited("file.downloaded", f"/{top}/project")


def test_a_dropped_socket_resumes_the_upload_and_the_download(
        browser: Any, server: ServerProcess, session: str, root: Path, tmp_path: Path) -> None:
    data = random_file(tmp_path / "resumed.bin", 40 * MiB)
    top = root.name
    with watched_context(browser, accept_downloads=True, **own_address()) as context:
        page = context.new_page()
        log_in(page, server.url, "admin", ADMIN_PASSWORD)
        files = open_files(page, session)
        go(files, f"/{top}")
        # the page closes its socket once 12 MiB are on the agent's disk
        files.evaluate("window.remoteFiles.dropAt(12 * 1024 * 1024)")
        files.set_input_files("#pick-files", str(data))
        [up] = settled(files, 1)
        assert up["state"] == "done", up
        assert up["resumes"] and up["resumes"][0] >= 12 * MiB, up  # resumed, not restarted
        assert files.evaluate("window.remoteFiles.state.reconnects") >= 1
        assert sha256_file(root / "resumed.bin") == sha256_file(data)
        wait_until(lambda: "resumed.bin" in names(files), what="the upload listed")
        # and a download
        files.evaluate("window.remoteFiles.dropAt(12 * 1024 * 1024)")
        with files.expect_download(timeout=120_000) as got:
            files.click('#entries tr[data-name="resumed.bin"] .download')
        assert sha256_file(Path(got.value.path())) == sha256_file(data)
        down = settled(files, 2)[1]
        assert down["state"] == "done" and down["resumes"] and down["resumes"][0] >= 12 * MiB, down
        assert files.evaluate("window.remoteFiles.state.reconnects") >= 2
        files.wait_for_selector("#state[data-state=connected]")


def test_an_upload_whose_partial_file_differs_starts_again(
        browser: Any, server: ServerProcess, session: str, root: Path, tmp_path: Path) -> None:
    """The agent's partial file is not this file's prefix (changed while the page was away):
    the page's SHA-256 of its own prefix differs from the agent's, so it starts afresh."""
    data = random_file(tmp_path / "restarted.bin", 30 * MiB)
    partial = root / ".restarted.bin.partial"
    with watched_context(browser, **own_address()) as context:
        page = context.new_page()
        log_in(page, server.url, "admin", ADMIN_PASSWORD)
        files = open_files(page, session)
        go(files, f"/{root.name}")
        files.evaluate("window.remoteFiles.hold(true)")
        files.evaluate("window.remoteFiles.dropAt(10 * 1024 * 1024)")
        files.set_input_files("#pick-files", str(data))
        files.wait_for_selector("#state[data-state=reconnecting]", timeout=60_000)
        wait_until(lambda: partial.exists() and partial.stat().st_size >= 10 * MiB,
                   what="the agent's partial file")
        with partial.open("r+b") as f:  # one byte of the agent's partial file changes
            f.seek(5 * MiB)
            byte = f.read(1)
            f.seek(5 * MiB)
            f.write(bytes([byte[0] ^ 0xFF]))
        files.evaluate("window.remoteFiles.hold(false)")
        [up] = settled(files, 1)
        # the page compared its prefix with the agent's, and started again rather than resume
        assert up["state"] == "done" and up["resumes"] == [] and up["restarts"] == 1, up
        assert sha256_file(root / "restarted.bin") == sha256_file(data)
        assert not partial.exists()


# The save dialog of showSaveFilePicker has no headless form: a stand-in answers it with
# a file of the browser's own private file system (OPFS), whose writable keeps its bytes
# apart until close() as a picked file's does, and the test reads that file back.
PICK_IN_OPFS = """
window.showSaveFilePicker = async ({ suggestedName }) => {
  window.picked = (window.picked || []).concat([suggestedName]);
  const root = await navigator.storage.getDirectory();
  return root.getFileHandle(suggestedName, { create: true });
};
"""
OPFS_SHA256 = """async (name) => {
  const root = await navigator.storage.getDirectory();
  let handle;
  try { handle = await root.getFileHandle(name); } catch (error) { return null; }
  const bytes = await (await handle.getFile()).arrayBuffer();
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}"""


def test_a_large_download_and_a_folder_go_straight_to_a_picked_file(
        browser: Any, server: ServerProcess, session: str, root: Path, tmp_path: Path) -> None:
    big = random_file(root / "streamed.bin", 6 * MiB)
    folder = root / "streamed-folder"
    (folder / "deeper").mkdir(parents=True)
    random_file(folder / "a.bin", 300 * 1024)
    random_file(folder / "deeper" / "b.bin", 2 * MiB)
    with watched_context(browser, **own_address()) as context:
        context.add_init_script(PICK_IN_OPFS)
        page = context.new_page()
        log_in(page, server.url, "admin", ADMIN_PASSWORD)
        files = open_files(page, session)
        go(files, f"/{root.name}")
        files.evaluate("window.remoteFiles.streamFrom = 1024 * 1024")  # 6 MiB counts as large
        files.click('#entries tr[data-name="streamed.bin"] .download')
        [down] = settled(files, 1)
        assert down["state"] == "done" and down["sha256"] == sha256_file(big), down
        assert files.evaluate(OPFS_SHA256, "streamed.bin") == sha256_file(big)
        files.click('#entries tr[data-name="streamed-folder"] .download')
        zipped = settled(files, 2)[1]
        assert zipped["state"] == "done", zipped
        assert files.evaluate("window.picked") == ["streamed.bin", "streamed-folder.zip"]
        assert files.evaluate(OPFS_SHA256, "streamed-folder.zip") == zipped["sha256"]


# On loopback a whole upload can pass in the time a click from the test takes (its row is
# redrawn every 200 ms, and Playwright waits for a row that holds still): the page itself
# presses Cancel, in the same task in which it sees the upload under way.
CANCEL_ONCE_UNDER_WAY = """(count) => {
  const watch = setInterval(() => {
    const [transfer] = window.remoteFiles.transfers();
    const button = document.querySelector("#transfers tr.transfer .cancel");
    if (transfer && transfer.done >= count && button) {
      clearInterval(watch);
      button.click();
      window.cancelledAt = transfer.done;
    }
  }, 1);
}"""


def test_cancel_stops_a_transfer_and_the_agent_drops_its_partial_file(
        browser: Any, server: ServerProcess, session: str, root: Path, tmp_path: Path) -> None:
    data = random_file(tmp_path / "cancelled.bin", 200 * MiB)
    with watched_context(browser, **own_address()) as context:
        page = context.new_page()
        log_in(page, server.url, "admin", ADMIN_PASSWORD)
        files = open_files(page, session)
        go(files, f"/{root.name}")
        files.evaluate(CANCEL_ONCE_UNDER_WAY, 1 * MiB)
        files.set_input_files("#pick-files", str(data))
        wait_until(lambda: files.evaluate("window.cancelledAt") is not None,
                   what="the page to cancel the upload under way")
        [up] = settled(files, 1)
        assert up["state"] == "cancelled" and up["done"] < 200 * MiB, up
        files.wait_for_selector(f'#transfers tr[data-id="{up["id"]}"][data-state=cancelled]')
        assert files.locator("#transfers tr.transfer .cancel").count() == 0
        wait_until(lambda: not (root / ".cancelled.bin.partial").exists(),
                   what="the agent's partial file gone")
        assert not (root / "cancelled.bin").exists()
        files.wait_for_selector("#state[data-state=connected]")  # the session goes on


def test_a_transfer_stops_saying_why_when_the_agent_goes(
        browser: Any, server: ServerProcess, admin: Api, display: Xvfb,
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    shared = tmp_path_factory.mktemp("gone-root")
    agent_id, key = admin.machine_with_key(organization="acme")
    agent = AgentProcess(tmp_path_factory.mktemp("agent-gone"), display.display,
                         "--server", server.url, "--key", key,
                         REMOTE_AGENT_FILE_ROOTS=str(shared))
    data = random_file(tmp_path / "unfinished.bin", 300 * MiB)
    try:
        session_id = admin.live_session(agent_id)["id"]
        with watched_context(browser, **own_address()) as context:
            page = context.new_page()
            log_in(page, server.url, "admin", ADMIN_PASSWORD)
            files = open_files(page, session_id)
            go(files, f"/{shared.name}")
            files.set_input_files("#pick-files", str(data))
            wait_until(lambda: transfers(files)[0]["done"] >= 4 * MiB, what="the upload under way")
            agent.stop()
            [up] = settled(files, 1, timeout=60)
            assert up["state"] == "failed" and up["message"].startswith("Stopped: "), up
            assert files.get_attribute("#state", "data-state") in ("ended", "refused")
            row = files.locator(f'#transfers tr[data-id="{up["id"]}"]')
            wait_until(lambda: "Stopped: " in row.inner_text(), what="the reason in the row")
    finally:
        agent.stop()


def test_a_listing_that_comes_while_a_path_is_typed_leaves_the_path_alone(
        browser: Any, server: ServerProcess, session: str, root: Path, tmp_path: Path) -> None:
    """A listing that arrives while the technician types a path (here the one after an
    upload, as the first one can when the page has just connected) keeps what they typed."""
    top = root.name
    small = tmp_path / f"while-typing-{uuid.uuid4().hex[:8]}.txt"
    small.write_text("typed meanwhile\n")
    try:
        with watched_context(browser, **own_address()) as context:
            page = context.new_page()
            log_in(page, server.url, "admin", ADMIN_PASSWORD)
            files = open_files(page, session)
            go(files, f"/{top}")
            files.fill("#path", f"/{top}/docs")  # the box keeps the focus
            files.set_input_files("#pick-files", str(small))
            wait_until(lambda: small.name in names(files),
                       what="the folder listed after the upload")
            assert files.input_value("#path") == f"/{top}/docs"
            assert files.evaluate("document.activeElement.id") == "path"
            files.press("#path", "Enter")
            wait_until(lambda: names(files) == ["readme.txt"], what="the typed folder listed")
            assert files.input_value("#path") == f"/{top}/docs"
    finally:  # the other tests share the root
        (root / small.name).unlink(missing_ok=True)


def test_paths_out_of_the_root_are_refused_in_plain_words(
        browser: Any, server: ServerProcess, session: str, root: Path) -> None:
    top = root.name
    with watched_context(browser, **own_address()) as context:
        page = context.new_page()
        log_in(page, server.url, "admin", ADMIN_PASSWORD)
        files = open_files(page, session)
        go(files, f"/{top}")
        # a symlinked folder that leads out of the root
        files.click('#entries tr[data-name="escape"] .entry-open')
        files.wait_for_selector("#error[data-code=outside-root]")
        assert "outside the folders this machine shares" in files.inner_text("#error")
        assert files.evaluate("window.remoteFiles.state.cwd") == f"/{top}"
        # a path with '..' typed into the path box
        files.fill("#path", f"/{top}/../..")
        files.click("#path-form button")
        files.wait_for_selector("#error[data-code=invalid-name]")
        assert "not allowed" in files.inner_text("#error")
        # a symlinked file that leads out: its download fails, saying why
        files.click('#entries tr[data-name="secret-link.txt"] .download')
        [failed] = settled(files, 1, timeout=30)
        assert failed["state"] == "failed" and failed["error"] == "outside-root", failed
        row = files.locator(f'#transfers tr[data-id="{failed["id"]}"]')
        wait_until(lambda: "outside the folders this machine shares" in row.inner_text(),
                   what=lambda: f"the failure said in the row: {row.inner_text()!r}")


def test_a_technician_without_the_permission_is_refused_clearly(
        browser: Any, server: ServerProcess, admin: Api, session: str) -> None:
    name = f"tech-{uuid.uuid4().hex[:6]}"
    r = admin.post("/api/users", json={"username": name, "password": TECH_PASSWORD,
                                       "role": "technician", "permissions": ["view", "control"]})
    r.raise_for_status()
    admin.put(f"/api/users/{r.json()['id']}/client-access",
              json={"organizations": ["*"]}).raise_for_status()
    with watched_context(browser, allow=("status of 403",), **own_address()) as context:
        page = context.new_page()
        log_in(page, server.url, name, TECH_PASSWORD)
        page.click("nav >> text=Machines")
        page.wait_for_selector(".open-viewer")
        assert page.locator(".open-files").count() == 0  # not offered
        with page.expect_popup() as popup:
            page.evaluate("(id) => window.open(`./files.html?session=${id}`)", session)
        files = popup.value
        files.wait_for_selector("#state[data-state=refused]", timeout=20_000)
        assert files.inner_text("#state").startswith("Cannot open the files: ")
        assert "file_transfer" in files.inner_text("#state")
    address = {"X-Forwarded-For": fresh_ip()}
    token = httpx.post(f"{server.url}/api/auth/login", headers=address,
                       json={"username": name, "password": TECH_PASSWORD}).json()["access_token"]
    r = httpx.post(f"{server.url}/api/sessions/{session}/viewer-token",
                   params={"file_transfer": "true"},
                   headers={**address, "Authorization": f"Bearer {token}"})
    assert r.status_code == 403

"""File transfer end to end with the Python client: a real server process, a real agent
process under Xvfb whose file root is a folder of this test, real files both ways.

What the console does in the browser (plugins/web_console/tests/test_files_browser.py),
this does from Python, faster and with a dropped connection cut exactly mid-transfer.
"""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from remote_server.testing.processes import AgentProcess, Api, ServerProcess
from remote_viewer.files import Download, FileTransferError, open_files

from remote_core.testing.xvfb import Xvfb, xvfb
from remote_core.wsclient import ConnectionClosed

pytestmark = [pytest.mark.slow, pytest.mark.xvfb, pytest.mark.anyio]

MB = 1024 * 1024


@pytest.fixture(scope="module")
def display() -> Iterator[Xvfb]:
    with xvfb(320, 240, set_display=False) as server:
        yield server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path_factory.mktemp("files-server")).start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def admin(server: ServerProcess) -> Iterator[Api]:
    api = Api(server)
    yield api
    api.close()


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("shared")


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory, display: Xvfb, server: ServerProcess,
            admin: Api, root: Path) -> Iterator[str]:
    """A managed agent's live session whose one file root is ``root``."""
    agent_id, key = admin.machine_with_key()
    agent = AgentProcess(tmp_path_factory.mktemp("agent"), display.display,
                         "--server", server.url, "--key", key,
                         REMOTE_AGENT_FILE_ROOTS=str(root))
    try:
        yield str(admin.live_session(agent_id)["id"])
    finally:
        agent.stop()


def files_token(admin: Api, session_id: str) -> str:
    r = admin.post(f"/api/sessions/{session_id}/viewer-token", params={"file_transfer": "true"})
    r.raise_for_status()
    return str(r.json()["token"])


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(MB), b""):
            digest.update(block)
    return digest.hexdigest()


def partial_bytes(root: Path, name: str) -> int:
    """Bytes in the hidden partial files the agent keeps for an upload of ``name``."""
    return sum(p.stat().st_size for p in root.iterdir() if p.name.startswith(f".{name}"))


def events(admin: Api, session_id: str, kind: str) -> list[dict[str, Any]]:
    body = admin.get("/api/events", params={"session_id": session_id, "limit": 200}).json()
    return [e for e in (body["items"] if isinstance(body, dict) else body) if e["kind"] == kind]


async def test_a_large_file_and_a_folder_go_up_and_come_back_whole(
        server: ServerProcess, admin: Api, session: str, root: Path, tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(50 * MB))
    folder = tmp_path / "tree"
    for name, body in {"a.txt": b"alpha", "sub/b.txt": b"beta", "sub/deeper/c.bin":
                       os.urandom(3 * MB), "sub/ü é.txt": "ünïcode".encode()}.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(body)
    top = f"/{root.name}"
    async with open_files(server.url, files_token(admin, session)) as client:
        assert [(e.name, e.is_dir) for e in await client.list("/")] == [(root.name, True)]
        assert await client.upload(big, f"{top}/big.bin") == sha256(big)
        assert sha256(root / "big.bin") == sha256(big)
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            await client.upload(path, f"{top}/tree/{path.relative_to(folder).as_posix()}")
        listing = {e.name: e for e in await client.list(f"{top}/tree")}
        assert listing["sub"].is_dir and listing["a.txt"].size == 5
        # and back: the file, then the folder as a zip
        back = Download(f"{top}/big.bin", tmp_path / "back.bin")
        assert await client.download(back) == sha256(big)
        assert sha256(tmp_path / "back.bin") == sha256(big)
        zipped = Download(f"{top}/tree", tmp_path / "tree.zip")
        await client.download(zipped)
    with zipfile.ZipFile(io.BytesIO((tmp_path / "tree.zip").read_bytes())) as archive:
        names = sorted(n for n in archive.namelist() if not n.endswith("/"))
        assert names == sorted(p.relative_to(folder).as_posix()
                               for p in folder.rglob("*") if p.is_file())
        for name in names:
            assert archive.read(name) == (folder / name).read_bytes()
    uploaded = events(admin, session, "file.uploaded")
    assert {"path": f"{top}/big.bin", "size": 50 * MB, "sha256": sha256(big)}.items() <= next(
        e["detail"] for e in uploaded if e["detail"]["path"] == f"{top}/big.bin").items()
    assert len(uploaded) == 5 and all(e["actor"] == "admin" for e in uploaded)
    assert {e["detail"]["path"] for e in events(admin, session, "file.downloaded")} == {
        f"{top}/big.bin", f"{top}/tree"}


async def test_transfers_cut_by_a_dropped_connection_resume_and_complete(
        server: ServerProcess, admin: Api, session: str, root: Path, tmp_path: Path) -> None:
    body = tmp_path / "resume.bin"
    body.write_bytes(os.urandom(40 * MB))
    top = f"/{root.name}"
    # an upload cut mid-way: the partial stays hidden, never under the final name
    async with open_files(server.url, files_token(admin, session)) as client:
        async with anyio.create_task_group() as group:
            async def cut() -> None:
                while partial_bytes(root, "resume.bin") < 8 * MB:  # noqa: ASYNC110 - a file
                    await anyio.sleep(0.01)
                await client.drop()
            group.start_soon(cut)
            with pytest.raises(ConnectionClosed):
                await client.upload(body, f"{top}/resume.bin")
    assert not (root / "resume.bin").exists()
    async with open_files(server.url, files_token(admin, session)) as client:
        assert await client.upload(body, f"{top}/resume.bin", resume=True) == sha256(body)
    assert sha256(root / "resume.bin") == sha256(body)
    assert partial_bytes(root, "resume.bin") == 0  # the partial was renamed into place
    resumed = [e["detail"] for e in events(admin, session, "file.uploaded")
               if e["detail"]["path"] == f"{top}/resume.bin"]
    assert resumed and resumed[-1]["resumed_at"] > 0
    # a download cut mid-way resumes from what arrived
    download = Download(f"{top}/resume.bin", tmp_path / "again.bin")
    async with open_files(server.url, files_token(admin, session)) as client:
        async with anyio.create_task_group() as group:
            async def cut_download() -> None:
                while download.received < 8 * MB:  # noqa: ASYNC110 - a count, no event
                    await anyio.sleep(0.01)
                await client.drop()
            group.start_soon(cut_download)
            with pytest.raises(ConnectionClosed):
                await client.download(download)
    assert 0 < download.received < 40 * MB
    async with open_files(server.url, files_token(admin, session)) as client:
        assert await client.download(download) == sha256(body)
    assert sha256(tmp_path / "again.bin") == sha256(body)


async def test_paths_out_of_the_root_and_bad_names_are_refused_clearly(
        server: ServerProcess, admin: Api, session: str, root: Path, tmp_path: Path) -> None:
    (root / "escape").symlink_to("/etc")
    small = tmp_path / "small.txt"
    small.write_bytes(b"small")
    top = f"/{root.name}"
    async with open_files(server.url, files_token(admin, session)) as client:
        for path in (f"{top}/../etc", "/etc/passwd", f"{top}/escape/passwd", "etc", f"{top}/"):
            with pytest.raises(FileTransferError) as refused:
                await client.list(path)
            assert refused.value.code in ("outside-root", "invalid-name"), path
            assert refused.value.message
        with pytest.raises(FileTransferError, match="outside-root"):
            await client.download(Download(f"{top}/escape/hostname", tmp_path / "x"))
        with pytest.raises(FileTransferError, match="outside-root"):
            await client.upload(small, f"{top}/escape/planted")
        with pytest.raises(FileTransferError, match="invalid-name"):
            await client.upload(small, f"{top}/bad\nname")
        await client.upload(small, f"{top}/small.txt")
        with pytest.raises(FileTransferError, match="exists"):
            await client.upload(small, f"{top}/small.txt")
        assert await client.upload(small, f"{top}/small.txt", overwrite=True)
    assert not await anyio.Path("/etc/planted").exists()
    failed = events(admin, session, "file.failed")
    assert {"outside-root", "invalid-name", "exists"} <= {e["detail"]["error"] for e in failed}


def remote_viewer(server: ServerProcess, token: str,
                  *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "remote_viewer.cli", "--server", server.url,
                           "--token", token, *args], capture_output=True, text=True,
                          timeout=120, check=False)


def test_the_command_line_lists_gets_and_puts_files(
        server: ServerProcess, admin: Api, session: str, root: Path, tmp_path: Path) -> None:
    token = files_token(admin, session)
    source = tmp_path / "cli.bin"
    source.write_bytes(os.urandom(3 * MB + 5))
    top = f"/{root.name}"
    put = remote_viewer(server, token, "put", str(source), f"{top}/cli.bin")
    assert put.returncode == 0, put.stderr
    assert put.stdout.strip() == f"{top}/cli.bin: {3 * MB + 5} bytes, sha256 {sha256(source)}"
    listed = remote_viewer(server, token, "ls", top)
    assert listed.returncode == 0, listed.stderr
    assert f"-0644 {3 * MB + 5:>14} cli.bin" in listed.stdout.splitlines()
    back = tmp_path / "back" / "cli.bin"
    got = remote_viewer(server, token, "get", f"{top}/cli.bin", str(back))
    assert got.returncode == 0, got.stderr
    assert sha256(back) == sha256(source)
    # every failure is one line and status 1
    for args, words in ((("get", f"{top}/none", str(tmp_path / "x")), "not-found: "),
                        (("put", str(source), f"{top}/cli.bin"), "exists: "),
                        (("ls", "/etc"), "outside-root: "),
                        (("put", str(tmp_path / "none"), f"{top}/n"), "is not a file")):
        failed = remote_viewer(server, token, *args)
        assert failed.returncode == 1 and words in failed.stderr, (args, failed.stderr)
        assert len(failed.stderr.strip().splitlines()) == 1, failed.stderr

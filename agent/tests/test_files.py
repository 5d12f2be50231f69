"""FILE_TRANSFER on the agent: a real FileService on real files in temporary folders.

The service is driven through its public methods, as the session drives it, and
what it sends is read as the viewer would read it: no file system is mocked.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import socket
import subprocess
import sys
import zipfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from remote_agent.bulk import (
    BUSY,
    HELD,
    LOW_WATER,
    MOST_YIELD,
    BulkLane,
    PictureLoad,
    unsent_bytes,
)
from remote_agent.file_roots import Roots
from remote_agent.file_upload import partial_name
from remote_agent.files import FileService

from remote_core.protocol import pb
from remote_core.protocol.files import CHUNK, WINDOW

pytestmark = [pytest.mark.anyio,
              pytest.mark.skipif(sys.platform == "win32", reason="POSIX paths and symlinks")]

LIST, DOWNLOAD, UPLOAD, MKDIR, CANCEL = (pb.FILE_OP_LIST, pb.FILE_OP_DOWNLOAD, pb.FILE_OP_UPLOAD,
                                         pb.FILE_OP_MKDIR, pb.FILE_OP_CANCEL)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Wire:
    """What the service sends, kept for the test to take in order, by request."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, Any]] = []
        self._arrived = anyio.Event()
        self.data_sent = 0

    async def send(self, kind: str, message: Any) -> None:
        if kind == "file_data":
            self.data_sent += len(message.data)
        self.messages.append((kind, message))
        self._arrived.set()

    async def take(self, match: Callable[[str, Any], bool]) -> tuple[str, Any]:
        with anyio.fail_after(10):
            while True:
                for i, (kind, message) in enumerate(self.messages):
                    if match(kind, message):
                        del self.messages[i]
                        return kind, message
                self._arrived = anyio.Event()
                await self._arrived.wait()

    async def sent(self, count: int) -> None:
        """Once ``count`` bytes of file data have been sent."""
        with anyio.fail_after(10):
            while self.data_sent < count:
                self._arrived = anyio.Event()
                await self._arrived.wait()

    async def reply(self, request_id: int) -> Any:
        return (await self.take(lambda k, m: k == "file_reply"
                                and m.request_id == request_id))[1]

    def pending(self, kind: str, request_id: int) -> list[Any]:
        return [m for k, m in self.messages if k == kind and m.request_id == request_id]


class Viewer:
    """A file viewer's end of one channel."""

    def __init__(self, service: FileService, wire: Wire, viewer_id: str) -> None:
        self.service, self.wire, self.viewer_id = service, wire, viewer_id
        self._ids = iter(range(1, 10**6))

    def request(self, op: int, path: str, request_id: int | None = None, **fields: Any) -> int:
        request_id = next(self._ids) if request_id is None else request_id
        self.service.request(pb.FileRequest(viewer_id=self.viewer_id, request_id=request_id,
                                            op=op, path=path, **fields))
        return request_id

    async def ask(self, op: int, path: str, **fields: Any) -> Any:
        return await self.wire.reply(self.request(op, path, **fields))

    def ack(self, request_id: int, count: int) -> None:
        self.service.ack(pb.FileAck(viewer_id=self.viewer_id, request_id=request_id,
                                    bytes=count))

    async def chunk(self, request_id: int) -> Any:
        """The next FileData of a download or, an error having ended it, its reply."""
        _, message = await self.wire.take(
            lambda k, m: k in ("file_data", "file_reply") and m.request_id == request_id)
        return message

    async def download(self, path: str, *, offset: int = 0, version: str = "",
                       stop_after: int | None = None) -> tuple[Any, bytes, Any]:
        """(first reply, the bytes, the last FileData or the error reply)."""
        request_id = self.request(DOWNLOAD, path, offset=offset, version=version)
        first = await self.wire.reply(request_id)
        if first.done:
            return first, b"", first
        data = bytearray()
        while True:
            message = await self.chunk(request_id)
            if isinstance(message, pb.FileReply):
                return first, bytes(data), message
            assert message.offset == offset + len(data)
            assert len(message.data) <= CHUNK
            data += message.data
            self.ack(request_id, len(message.data))
            if message.last:
                return first, bytes(data), message
            if stop_after is not None and len(data) >= stop_after:
                self.request(CANCEL, path, request_id=request_id)
                reply = await self.wire.reply(request_id)
                return first, bytes(data), reply

    async def upload(self, path: str, data: bytes, *, resume: bool = False,
                     overwrite: bool = False, checksum: str | None = None,
                     stop_at: int | None = None, size: int | None = None) -> tuple[Any, Any]:
        """(first reply, final reply); ``stop_at``: send that much, then return (None)."""
        request_id = self.request(UPLOAD, path, size=len(data) if size is None else size,
                                  resume=resume, overwrite=overwrite)
        first = await self.wire.reply(request_id)
        if first.done:
            return first, first
        offset = first.offset
        if offset:
            assert first.sha256 == sha(data[:offset])
        in_flight = 0
        while True:
            end = min(len(data), offset + CHUNK, stop_at if stop_at is not None else len(data))
            while in_flight + (end - offset) > WINDOW:
                _, ack = await self.wire.take(lambda k, m: k == "file_ack"
                                              and m.request_id == request_id)
                in_flight -= ack.bytes
            last = end == len(data)
            self.service.data(pb.FileData(
                viewer_id=self.viewer_id, request_id=request_id, offset=offset,
                data=data[offset:end], last=last,
                sha256=(checksum or sha(data)) if last else ""))
            in_flight += end - offset
            offset = end
            if last:
                return first, await self.wire.reply(request_id)
            if stop_at is not None and offset >= stop_at:
                while in_flight:
                    _, ack = await self.wire.take(lambda k, m: k == "file_ack"
                                                  and m.request_id == request_id)
                    in_flight -= ack.bytes
                return first, None


def names(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


@contextlib.asynccontextmanager
async def serving(*roots: Path, windows: bool = False,
                  max_transfers: int = 4) -> AsyncIterator[tuple[FileService, Wire, Viewer]]:
    wire = Wire()
    service = FileService(lambda: Roots(map(str, roots)), wire.send, windows=windows,
                          max_transfers=max_transfers)
    async with anyio.create_task_group() as group:
        await service.open(group, pb.FileOpen(viewer_id="v1", technician_name="lee"))
        try:
            yield service, wire, Viewer(service, wire, "v1")
        finally:
            await service.close_all()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "passwd").write_text("root:x:0:0\n")
    return secret


# -- roots and listing ----------------------------------------------------------------------------
async def test_slash_lists_the_roots_by_basename_deduplicated(tmp_path: Path) -> None:
    for folder in ("a/data", "b/data", "c/docs"):
        (tmp_path / folder).mkdir(parents=True)
    roots = Roots([str(tmp_path / "a/data"), str(tmp_path / "b/data"), str(tmp_path / "c/docs"),
                   str(tmp_path / "a/data"), str(tmp_path / "missing")])
    assert roots.by_name == {"data": str(tmp_path / "a/data"),
                             "data-2": str(tmp_path / "b/data"), "docs": str(tmp_path / "c/docs")}
    assert roots.missing == [str(tmp_path / "missing")]
    async with serving(tmp_path / "a/data", tmp_path / "b/data") as (_, _, viewer):
        reply = await viewer.ask(LIST, "/")
    assert reply.done and not reply.error
    assert [(e.name, e.is_dir) for e in reply.entries] == [("data", True), ("data-2", True)]


async def test_a_listing_puts_folders_first_and_shows_links(root: Path, outside: Path) -> None:
    (root / "zeta").mkdir()
    (root / "Alpha").mkdir()
    (root / "b.txt").write_bytes(b"12345")
    os.chmod(root / "b.txt", 0o640)
    os.utime(root / "b.txt", (1_700_000_000, 1_700_000_000))
    (root / "a.txt").write_bytes(b"")
    (root / "link-to-b").symlink_to("b.txt")
    (root / "broken").symlink_to("nowhere")
    (root / "escape").symlink_to(outside / "passwd")
    async with serving(root) as (_, _, viewer):
        reply = await viewer.ask(LIST, "/home")
    assert reply.done and not reply.error and reply.path == "/home"
    entries = {e.name: e for e in reply.entries}
    assert [e.name for e in reply.entries] == ["Alpha", "zeta", "a.txt", "b.txt", "broken",
                                               "escape", "link-to-b"]
    b = entries["b.txt"]
    assert (b.size, b.mtime, b.mode, b.is_dir, b.is_link) == (5, 1_700_000_000, 0o640, False,
                                                               False)
    assert entries["link-to-b"].is_link and entries["link-to-b"].size == 5
    assert entries["broken"].is_link and not entries["broken"].is_dir
    escape = entries["escape"]  # listed as the link itself: nothing of the target shows
    assert escape.is_link and escape.size == len(str(outside / "passwd"))


async def test_listing_a_file_or_nothing_is_an_error(root: Path) -> None:
    (root / "f").write_text("x")
    async with serving(root) as (_, _, viewer):
        assert (await viewer.ask(LIST, "/home/f")).error == "not-a-directory"
        missing = await viewer.ask(LIST, "/home/none")
    assert (missing.error, missing.done) == ("not-found", True)


# -- escapes ---------------------------------------------------------------------------------
async def test_traversal_and_absolute_paths_are_refused(root: Path, outside: Path) -> None:
    async with serving(root) as (_, _, viewer):
        for path in ("/home/../secret", "home/x", "/home//x", "/home/a\\..\\b", "/home/."):
            reply = await viewer.ask(LIST, path)
            assert (reply.error, reply.done) == ("invalid-name", True), path
        # An absolute path of the machine names no root: outside, not missing.
        for op in (LIST, DOWNLOAD, UPLOAD):
            reply = await viewer.ask(op, str(outside / "passwd"), size=3)
            assert reply.error == "outside-root", (op, reply)
        assert (await viewer.ask(DOWNLOAD, "/etc/passwd")).error == "outside-root"


async def test_a_symlink_out_of_the_root_is_refused_every_way(root: Path, outside: Path) -> None:
    (root / "out").symlink_to(outside)
    (root / "pw").symlink_to(outside / "passwd")
    async with serving(root) as (_, _, viewer):
        assert (await viewer.ask(LIST, "/home/out")).error == "outside-root"
        assert (await viewer.ask(DOWNLOAD, "/home/pw")).error == "outside-root"
        assert (await viewer.ask(DOWNLOAD, "/home/out/passwd")).error == "outside-root"
        first, _ = await viewer.upload("/home/out/new.txt", b"evil")
        assert (first.error, first.done) == ("outside-root", True)
        first, _ = await viewer.upload("/home/pw", b"evil", overwrite=True)
        assert first.error == "outside-root"
        first, _ = await viewer.upload("/home/out/deep/er/new.txt", b"evil")
        assert first.error == "outside-root"
        assert (await viewer.ask(MKDIR, "/home/out/made")).error == "outside-root"
    assert names(outside) == ["passwd"]
    assert (outside / "passwd").read_text() == "root:x:0:0\n"


async def test_a_symlink_inside_the_root_is_followed(root: Path) -> None:
    (root / "real").mkdir()
    (root / "real" / "f.txt").write_bytes(b"inside")
    (root / "alias").symlink_to(root / "real")
    async with serving(root) as (_, _, viewer):
        assert [e.name for e in (await viewer.ask(LIST, "/home/alias")).entries] == ["f.txt"]
        _, data, last = await viewer.download("/home/alias/f.txt")
    assert data == b"inside" and last.sha256 == sha(b"inside")


# -- downloads -------------------------------------------------------------------------------
async def test_a_download_of_a_few_megabytes_arrives_whole(root: Path) -> None:
    body = os.urandom(5 * 1024 * 1024 + 123)
    (root / "big.bin").write_bytes(body)
    stat = (root / "big.bin").stat()
    async with serving(root) as (_, _, viewer):
        first, data, last = await viewer.download("/home/big.bin")
    assert (first.size, first.offset, first.archive, first.done) == (len(body), 0, False, False)
    assert first.version == f"{stat.st_size}-{stat.st_mtime_ns}"
    assert data == body and last.last and last.sha256 == sha(body)


async def test_an_empty_file_is_one_last_chunk(root: Path) -> None:
    (root / "empty").write_bytes(b"")
    async with serving(root) as (_, _, viewer):
        first, data, last = await viewer.download("/home/empty")
    assert first.size == 0 and data == b"" and last.last and last.sha256 == sha(b"")


async def test_a_download_resumes_and_hashes_the_whole_file(root: Path) -> None:
    body = os.urandom(3 * CHUNK + 77)
    (root / "f.bin").write_bytes(body)
    async with serving(root) as (_, _, viewer):
        first, head, stopped = await viewer.download("/home/f.bin", stop_after=CHUNK)
        assert (stopped.error, stopped.done) == ("cancelled", True)
        again, tail, last = await viewer.download("/home/f.bin", offset=len(head),
                                                  version=first.version)
        assert again.offset == len(head) and again.version == first.version
        assert head + tail == body and last.sha256 == sha(body)
        (root / "f.bin").write_bytes(body + b"more")
        refused, _, _ = await viewer.download("/home/f.bin", offset=len(head),
                                              version=first.version)
    assert (refused.error, refused.done) == ("changed", True)


async def test_a_file_that_changes_while_it_is_sent_ends_changed(root: Path) -> None:
    body = os.urandom(WINDOW + 2 * CHUNK)
    (root / "f.bin").write_bytes(body)
    async with serving(root) as (_, wire, viewer):
        request_id = viewer.request(DOWNLOAD, "/home/f.bin")
        await wire.reply(request_id)
        await wire.sent(WINDOW)
        with (root / "f.bin").open("ab") as grown:
            grown.write(b"appended meanwhile")
        while True:
            message = await viewer.chunk(request_id)
            if isinstance(message, pb.FileReply):
                break
            assert not message.last
            viewer.ack(request_id, len(message.data))
    assert (message.error, message.done) == ("changed", True)


async def test_the_window_bounds_what_is_unacknowledged(root: Path) -> None:
    (root / "f.bin").write_bytes(os.urandom(WINDOW + 3 * CHUNK))
    async with serving(root) as (_, wire, viewer):
        request_id = viewer.request(DOWNLOAD, "/home/f.bin")
        await wire.reply(request_id)
        await wire.sent(WINDOW)
        await anyio.sleep(0.3)  # time enough to overrun, were it allowed
        assert wire.data_sent == WINDOW
        viewer.ack(request_id, CHUNK)
        await wire.sent(WINDOW + CHUNK)
        await anyio.sleep(0.2)
        assert wire.data_sent == WINDOW + CHUNK
        viewer.ack(request_id, 10 * WINDOW)  # more than was sent: ignored
        assert wire.data_sent == WINDOW + CHUNK


async def test_a_folder_downloads_as_a_zip_of_its_tree(root: Path, outside: Path) -> None:
    tree = root / "project"
    (tree / "src" / "pkg").mkdir(parents=True)
    (tree / "empty").mkdir()
    (tree / "README").write_text("hello\n")
    (tree / "src" / "pkg" / "data.bin").write_bytes(os.urandom(3 * 1024 * 1024))
    (tree / "src" / "a.py").write_text("print(1)\n")
    (tree / "src" / "alias.py").symlink_to(tree / "src" / "a.py")
    (tree / "escape").symlink_to(outside / "passwd")
    os.mkfifo(tree / "fifo")
    async with serving(root) as (_, _, viewer):
        first, archive, last = await viewer.download("/home/project")
        assert (first.archive, first.size) == (True, 0) and first.version.startswith("zip-")
        assert last.last and last.sha256 == sha(archive)
        # A resume makes the same archive again and skips what arrived.
        head_first, head, stopped = await viewer.download("/home/project", stop_after=CHUNK)
        assert stopped.error == "cancelled" and head_first.version == first.version
        _, tail, resumed = await viewer.download("/home/project", offset=len(head),
                                                 version=first.version)
        assert head + tail == archive and resumed.sha256 == sha(archive)
    with zipfile.ZipFile(io.BytesIO(archive)) as opened:
        names = opened.namelist()
        contents = {n: opened.read(n) for n in names if not n.endswith("/")}
    assert names == ["README", "empty/", "src/", "src/a.py", "src/alias.py", "src/pkg/",
                     "src/pkg/data.bin"]
    for name, data in contents.items():
        assert data == (tree / name).read_bytes(), name


async def test_a_folder_that_changes_has_another_version(root: Path) -> None:
    (root / "d").mkdir()
    (root / "d" / "f").write_text("one")
    async with serving(root) as (_, _, viewer):
        first, _, _ = await viewer.download("/home/d")
        (root / "d" / "g").write_text("two")
        refused, _, _ = await viewer.download("/home/d", offset=10, version=first.version)
    assert refused.error == "changed"


# -- uploads ---------------------------------------------------------------------------------
async def test_an_upload_round_trip_keeps_its_sha256(root: Path) -> None:
    body = os.urandom(4 * 1024 * 1024 + 5)
    async with serving(root) as (_, _, viewer):
        first, final = await viewer.upload("/home/new/deeper/up.bin", body)
        assert (first.offset, first.done, first.error) == (0, False, "")
        assert (final.done, final.error, final.sha256) == (True, "", sha(body))
        _, data, last = await viewer.download("/home/new/deeper/up.bin")
    assert data == body and last.sha256 == sha(body)
    assert (root / "new/deeper/up.bin").read_bytes() == body
    assert not (root / "new/deeper" / partial_name("up.bin")).exists()


async def test_an_empty_upload(root: Path) -> None:
    async with serving(root) as (_, _, viewer):
        _, final = await viewer.upload("/home/empty", b"")
    assert final.done and not final.error and (root / "empty").read_bytes() == b""


async def test_an_upload_resumes_its_partial_file(root: Path) -> None:
    body = os.urandom(3 * CHUNK + 99)
    wire = Wire()
    service = FileService(lambda: Roots([str(root)]), wire.send)
    async with anyio.create_task_group() as group:
        await service.open(group, pb.FileOpen(viewer_id="v1", technician_name="lee"))
        first, final = await Viewer(service, wire, "v1").upload("/home/r.bin", body,
                                                                stop_at=2 * CHUNK)
        assert final is None
        await service.close("v1")  # the viewer left mid-way: the partial stays
        await anyio.sleep(0.05)
        partial = root / partial_name("r.bin")
        assert partial.read_bytes() == body[:2 * CHUNK] and not (root / "r.bin").exists()
        await service.open(group, pb.FileOpen(viewer_id="v2", technician_name="lee"))
        viewer = Viewer(service, wire, "v2")
        listed = await viewer.ask(LIST, "/home")  # a file not whole yet is no file to show
        assert partial.name not in [e.name for e in listed.entries]
        first, final = await viewer.upload("/home/r.bin", body, resume=True)
        assert first.offset == 2 * CHUNK and first.sha256 == sha(body[:2 * CHUNK])
        assert final.done and final.sha256 == sha(body)
        # Without resume a partial file is started afresh.
        (root / partial_name("s.bin")).write_bytes(b"stale")
        first, final = await viewer.upload("/home/s.bin", b"fresh")
        assert first.offset == 0 and final.sha256 == sha(b"fresh")
        await service.close_all()
    assert (root / "r.bin").read_bytes() == body and not partial.exists()
    assert (root / "s.bin").read_bytes() == b"fresh"
    assert not (root / partial_name("s.bin")).exists()


async def test_a_checksum_mismatch_leaves_nothing_under_the_final_name(root: Path) -> None:
    async with serving(root) as (_, _, viewer):
        _, final = await viewer.upload("/home/bad.bin", os.urandom(CHUNK + 1),
                                       checksum="0" * 64)
    assert (final.error, final.done) == ("checksum", True)
    assert names(root) == []


async def test_sizes_other_than_declared_are_changed(root: Path) -> None:
    async with serving(root) as (_, _, viewer):
        _, final = await viewer.upload("/home/short", b"12345", size=6)
        assert final.error == "changed"
        _, final = await viewer.upload("/home/long", b"12345", size=4)
        assert final.error == "changed"
    assert names(root) == []


async def test_a_gap_in_the_offsets_is_an_error(root: Path) -> None:
    async with serving(root) as (service, wire, viewer):
        request_id = viewer.request(UPLOAD, "/home/g", size=10)
        await wire.reply(request_id)
        service.data(pb.FileData(viewer_id="v1", request_id=request_id, offset=3, data=b"x"))
        reply = await wire.reply(request_id)
    assert (reply.error, reply.done) == ("io", True)
    assert not (root / "g").exists()


async def test_existing_targets(root: Path) -> None:
    (root / "there.txt").write_text("old")
    (root / "folder").mkdir()
    async with serving(root) as (_, _, viewer):
        first, _ = await viewer.upload("/home/there.txt", b"new")
        assert (first.error, first.done) == ("exists", True)
        _, final = await viewer.upload("/home/there.txt", b"new", overwrite=True)
        assert final.done and not final.error
        first, _ = await viewer.upload("/home/folder", b"new", overwrite=True)
        assert first.error == "is-a-directory"
        first, _ = await viewer.upload("/home/there.txt/under", b"new")
        assert first.error == "not-a-directory"
        first, _ = await viewer.upload("/home", b"new")
        assert first.error == "is-a-directory"
    assert (root / "there.txt").read_text() == "new"


async def test_names_a_file_cannot_have_are_refused(root: Path) -> None:
    async with serving(root) as (_, _, viewer):
        first, _ = await viewer.upload("/home/bell\x07.txt", b"x")
        assert (first.error, first.done) == ("invalid-name", True)
        _, final = await viewer.upload("/home/a:b.txt", b"x")  # fine on POSIX
        assert final.done and not final.error
    async with serving(root, windows=True) as (_, _, viewer):
        for name in ("c:d.txt", "con.txt", "trailing.", "what?"):
            first, _ = await viewer.upload(f"/home/{name}", b"x")
            assert first.error == "invalid-name", name
        assert (await viewer.ask(MKDIR, "/home/aux/sub")).error == "invalid-name"
    assert names(root) == ["a:b.txt"]


async def test_mkdir_makes_parents_and_tolerates_a_folder(root: Path) -> None:
    (root / "file").write_text("x")
    async with serving(root) as (_, _, viewer):
        made = await viewer.ask(MKDIR, "/home/a/b/c")
        assert (made.done, made.error, made.path) == (True, "", "/home/a/b/c")
        assert (await viewer.ask(MKDIR, "/home/a/b")).error == ""
        assert (await viewer.ask(MKDIR, "/home/file")).error == "exists"
        assert (await viewer.ask(MKDIR, "/home/file/sub")).error == "not-a-directory"
    assert (root / "a/b/c").is_dir()


# -- cancel and limits -----------------------------------------------------------------------
async def test_cancel_stops_an_upload_and_removes_its_partial(root: Path) -> None:
    async with serving(root) as (service, wire, viewer):
        request_id = viewer.request(UPLOAD, "/home/c.bin", size=3 * CHUNK)
        await wire.reply(request_id)
        service.data(pb.FileData(viewer_id="v1", request_id=request_id, offset=0,
                                 data=b"x" * CHUNK))
        await wire.take(lambda k, m: k == "file_ack")
        viewer.request(CANCEL, "/home/c.bin", request_id=request_id)
        reply = await wire.reply(request_id)
        assert (reply.error, reply.done) == ("cancelled", True)
        assert names(root) == []  # gone before the answer, and the path free again:
        again = await viewer.ask(UPLOAD, "/home/c.bin", size=1)
        assert (again.error, again.done) == ("", False)
        viewer.request(CANCEL, "/home/c.bin", request_id=request_id)  # over: no answer
        await anyio.sleep(0.1)
        assert wire.pending("file_reply", request_id) == []


async def test_more_transfers_than_allowed_are_busy(root: Path) -> None:
    (root / "f.bin").write_bytes(os.urandom(WINDOW + CHUNK))
    async with serving(root, max_transfers=2) as (_, wire, viewer):
        running = [viewer.request(DOWNLOAD, "/home/f.bin") for _ in range(2)]
        busy = await viewer.ask(DOWNLOAD, "/home/f.bin")
        assert (busy.error, busy.done) == ("busy", True)
        assert not (await viewer.ask(LIST, "/home")).error  # listing is no transfer
        for request_id in running:
            assert not (await wire.reply(request_id)).done
        viewer.request(CANCEL, "/home/f.bin", request_id=running[0])
        assert (await wire.reply(running[0])).error == "cancelled"
        assert not (await viewer.ask(DOWNLOAD, "/home/f.bin")).done


async def test_an_upload_that_overruns_its_window_loses_the_channel(root: Path) -> None:
    async with serving(root) as (service, wire, viewer):
        request_id = viewer.request(UPLOAD, "/home/o.bin", size=2 * WINDOW)
        await wire.reply(request_id)
        for i in range(WINDOW // CHUNK + 1):
            service.data(pb.FileData(viewer_id="v1", request_id=request_id, offset=i * CHUNK,
                                     data=b"y" * CHUNK))
        _, closed = await wire.take(lambda k, m: k == "file_close")
        assert "overran its window" in closed.reason
        await anyio.sleep(0.1)
        assert "v1" not in service.channels
    assert (root / partial_name("o.bin")).exists()  # kept for a resume, as when it leaves


# -- a full disk -----------------------------------------------------------------------------
@pytest.fixture
def small_disk(tmp_path: Path) -> Any:
    """A 1 MiB tmpfs (needs root and a mount namespace the test may mount in)."""
    mount = tmp_path / "small"
    mount.mkdir()
    if sys.platform != "linux" or os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root on Linux")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode:
        pytest.skip(f"a tmpfs cannot be mounted here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


async def test_a_full_disk_is_no_space_and_leaves_no_partial(small_disk: Path) -> None:
    async with serving(small_disk) as (_, wire, viewer):
        first, _ = await viewer.upload("/small/huge.bin", b"", size=4 * 1024 * 1024)
        assert (first.error, first.done) == ("no-space", True)  # told up front
        body = os.urandom(768 * 1024)
        request_id = viewer.request(UPLOAD, "/small/fill.bin", size=len(body))
        assert (await wire.reply(request_id)).offset == 0
        (small_disk / "meanwhile").write_bytes(b"z" * 512 * 1024)  # the disk fills up
        offset = 0
        while offset < len(body):
            viewer.service.data(pb.FileData(viewer_id="v1", request_id=request_id,
                                            offset=offset, data=body[offset:offset + CHUNK],
                                            last=offset + CHUNK >= len(body), sha256=sha(body)))
            offset += CHUNK
        reply = await wire.reply(request_id)
    assert (reply.error, reply.done) == ("no-space", True)
    assert names(small_disk) == ["meanwhile"]


# -- file data yields to the picture ---------------------------------------------------------
async def test_bulk_data_waits_for_urgent_messages_and_a_drained_socket() -> None:
    order: list[bytes] = []
    unsent = [0]

    async def write(data: bytes) -> None:
        await anyio.sleep(0.02)
        order.append(data)

    lane = BulkLane(write, lambda: unsent[0])
    async with anyio.create_task_group() as group:
        group.start_soon(lane.urgent, b"frame1")
        await anyio.sleep(0.005)
        group.start_soon(lane.bulk, b"chunk1")
        group.start_soon(lane.bulk, b"chunk2")
        await anyio.sleep(0.005)
        group.start_soon(lane.urgent, b"frame2")
    assert order == [b"frame1", b"frame2", b"chunk1", b"chunk2"]
    order.clear()
    unsent[0] = LOW_WATER + 1
    async with anyio.create_task_group() as group:
        group.start_soon(lane.bulk, b"chunk3")
        await anyio.sleep(0.05)
        assert order == []  # the socket still holds too much
        await lane.urgent(b"frame3")  # the picture is not held back
        unsent[0] = 0
    assert order == [b"frame3", b"chunk3"]


def test_a_picture_short_of_time_is_told_while_it_moves() -> None:
    now = [0.0]
    load = PictureLoad(lambda: now[0])
    assert not load.short  # nothing streamed yet
    for _ in range(10):
        load.frame(0.025, 1 / 30)  # 75% of a frame time: room to spare
    assert not load.short
    for _ in range(10):
        now[0] += 1 / 30
        load.frame(BUSY / 30 + 0.001, 1 / 30)  # all of it
    assert load.short
    now[0] += 0.6  # the screen stopped moving: the picture needs nothing
    assert not load.short
    load.frame(0.001, 1 / 30)  # moving again, and cheaply...
    assert not load.short
    load.held()  # ...but a frame waits for late acknowledgements
    assert load.short
    now[0] += HELD
    assert not load.short


async def test_file_data_waits_a_little_for_a_picture_short_of_time() -> None:
    sent: list[float] = []

    async def write(_: bytes) -> None:
        sent.append(anyio.current_time())

    load = PictureLoad()
    lane = BulkLane(write, load=load)
    for _ in range(5):
        load.frame(1.0, 1 / 30)
    begun = anyio.current_time()
    await lane.bulk(b"chunk")
    await lane.urgent(b"frame")  # the picture itself never waits
    assert sent[0] - begun >= MOST_YIELD * 0.9  # held, but only so long: it goes anyway
    assert sent[1] - sent[0] < MOST_YIELD / 2


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SIOCOUTQ is Linux's")
def test_the_unsent_bytes_of_a_socket_are_seen() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname())
    peer, _ = server.accept()
    try:
        assert unsent_bytes(client) == 0
        client.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            while True:  # the peer reads nothing: both buffers fill
                client.send(b"x" * 65536)
        assert unsent_bytes(client) > LOW_WATER
        assert unsent_bytes(None) == 0
    finally:
        for sock in (client, peer, server):
            sock.close()


async def test_names_that_are_not_utf8_are_left_out(root: Path) -> None:
    os.mkdir(os.path.join(os.fsencode(root), b"latin1-\xe9"))
    (root / "d").mkdir()
    (root / "d" / os.fsdecode(b"caf\xe9.txt")).write_bytes(b"x")
    (root / "d" / "ok.txt").write_text("ok")
    async with serving(root) as (_, _, viewer):
        assert [e.name for e in (await viewer.ask(LIST, "/home")).entries] == ["d"]
        _, archive, last = await viewer.download("/home/d")
    assert last.last
    with zipfile.ZipFile(io.BytesIO(archive)) as opened:
        assert opened.namelist() == ["ok.txt"]

"""The Python file-transfer client: a FILE_TRANSFER session's browsing and transfers.

One reader task sorts what arrives by request id, so several requests may run
at once on one socket. Transfers keep the protocol's window both ways (at most
``WINDOW`` bytes sent and unacknowledged; what was written is acknowledged at
once) and check SHA-256 end to end. A transfer cut off by a dropped socket is
resumed by handing its :class:`Download` (or the same source path, with
``resume=True``) to a new client.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from google.protobuf.message import Message

from remote_core.protocol import Connection, Dropped, pb
from remote_core.protocol.files import CHUNK, WINDOW
from remote_core.protocol.window import Window
from remote_core.wsclient import ConnectionClosed, WebSocketClient

from .client import beside, join
from .settings import ViewerSettings

__all__ = ["Download", "FileClient", "FileTransferError", "open_files"]

PARTIAL_SUFFIX = ".partial"
"""A download is written beside its target under this suffix until its SHA-256 checks."""


class FileTransferError(Exception):
    """The agent or the server refused or ended a request: ``code`` is its error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}" if message else code)
        self.code = code
        self.message = message


@dataclass
class Download:
    """One download, resumable across connections: where it goes and how far it got."""

    path: str
    target: Path
    version: str = ""
    size: int = 0
    archive: bool = False
    received: int = 0
    sha256: str = ""
    _hash: Any = field(default_factory=hashlib.sha256, repr=False)

    @property
    def partial(self) -> Path:
        return self.target.with_name(self.target.name + PARTIAL_SUFFIX)


class FileClient:
    """One FILE_TRANSFER connection; build it with :func:`open_files`."""

    def __init__(self, ws: WebSocketClient, conn: Connection) -> None:
        self._ws = ws
        self._conn = conn
        self._next_id = 0
        self._inboxes: dict[int, MemoryObjectSendStream[tuple[str, Any]]] = {}
        self.closed: ConnectionClosed | None = None

    async def send(self, kind: str, payload: Message) -> None:
        await self._ws.send(self._conn.send(kind, payload))

    # -- requests ----------------------------------------------------------------------------
    async def list(self, path: str = "/") -> list[pb.FileEntry]:
        """The entries of the directory at ``path`` ("/": the agent's roots)."""
        async with self._request(pb.FILE_OP_LIST, path) as (_, inbox):
            reply = await self._reply(inbox)
            return list(reply.entries)

    async def mkdir(self, path: str) -> None:
        """Create the directory at ``path`` and its missing parents."""
        async with self._request(pb.FILE_OP_MKDIR, path) as (_, inbox):
            await self._reply(inbox)

    async def download(self, download: Download) -> str:
        """Fetch ``download.path`` (a folder arrives as a zip) into ``download.target``; on
        a second call (a new client after a drop) resume where it stopped. Returns the
        SHA-256, checked against the agent's; the target appears only once it checks."""
        download.partial.parent.mkdir(parents=True, exist_ok=True)
        if download.received and download.partial.stat().st_size != download.received:
            raise FileTransferError("changed", f"{download.partial} is not as it was left")
        mode = "r+b" if download.received else "wb"
        async with self._request(pb.FILE_OP_DOWNLOAD, download.path, offset=download.received,
                                 version=download.version) as (request_id, inbox):
            reply = await self._reply(inbox)
            download.version, download.size, download.archive = (
                reply.version, reply.size, reply.archive)
            with download.partial.open(mode) as out:
                out.seek(download.received)
                while True:
                    kind, message = await inbox.receive()
                    if kind == "file_reply":
                        raise _failed(message)
                    if message.offset != download.received:
                        raise FileTransferError("io", f"data at {message.offset}, expected "
                                                      f"{download.received}")
                    await anyio.to_thread.run_sync(out.write, message.data)
                    download._hash.update(message.data)
                    download.received += len(message.data)
                    await self.send("file_ack", pb.FileAck(request_id=request_id,
                                                           bytes=len(message.data)))
                    if message.last:
                        break
        download.sha256 = download._hash.hexdigest()
        if message.sha256 != download.sha256:
            download.partial.unlink()
            raise FileTransferError("checksum", f"received {download.sha256}, the agent sent "
                                                f"{message.sha256}")
        os.replace(download.partial, download.target)
        return download.sha256

    async def upload(self, source: Path, path: str, *, overwrite: bool = False,
                     resume: bool = False) -> str:
        """Send the file ``source`` to ``path`` on the agent; with ``resume``, continue a
        partial upload the agent holds if its first bytes are ours. Returns the SHA-256 the
        agent verified."""
        size = (await anyio.Path(source).stat()).st_size
        digest = hashlib.sha256()
        async with self._request(pb.FILE_OP_UPLOAD, path, size=size, overwrite=overwrite,
                                 resume=resume) as (request_id, inbox):
            reply = await self._reply(inbox)
            with source.open("rb") as data:
                prefix = await anyio.to_thread.run_sync(data.read, reply.offset)
                digest.update(prefix)
                if reply.offset and reply.sha256 != digest.hexdigest():
                    raise FileTransferError("changed", "the agent's partial file is not the "
                                                       "start of this one; upload afresh")
                window = Window(WINDOW)
                offset = reply.offset
                while True:
                    chunk = await anyio.to_thread.run_sync(data.read, CHUNK)
                    digest.update(chunk)
                    last = offset + len(chunk) >= size
                    while window.room < len(chunk):
                        window.acked(await self._ack(inbox))
                    window.sent(len(chunk))
                    await self.send("file_data", pb.FileData(
                        request_id=request_id, offset=offset, data=chunk, last=last,
                        sha256=digest.hexdigest() if last else ""))
                    offset += len(chunk)
                    if last:
                        break
            while True:
                kind, message = await inbox.receive()
                if kind == "file_reply":
                    if message.error:
                        raise _failed(message)
                    return str(message.sha256)

    async def cancel(self, request_id: int) -> None:
        await self.send("file_request", pb.FileRequest(request_id=request_id,
                                                       op=pb.FILE_OP_CANCEL))

    # -- plumbing ----------------------------------------------------------------------------
    @asynccontextmanager
    async def _request(self, op: int, path: str, **fields: Any) -> AsyncIterator[
            tuple[int, MemoryObjectReceiveStream[tuple[str, Any]]]]:
        if self.closed is not None:
            raise self.closed
        self._next_id += 1
        request_id = self._next_id
        send, receive = anyio.create_memory_object_stream[tuple[str, Any]](WINDOW // CHUNK + 8)
        self._inboxes[request_id] = send
        try:
            await self.send("file_request", pb.FileRequest(
                request_id=request_id, op=op, path=path, **fields))  # type: ignore[arg-type]
            yield request_id, receive
        except anyio.EndOfStream:  # the reader met the connection's end
            raise self.closed or ConnectionClosed(1006, "connection lost") from None
        finally:
            del self._inboxes[request_id]
            send.close()

    async def _reply(self, inbox: MemoryObjectReceiveStream[tuple[str, Any]]) -> Any:
        kind, message = await inbox.receive()
        if kind != "file_reply":
            raise FileTransferError("io", f"{kind} before the agent's reply")
        if message.error:
            raise _failed(message)
        return message

    async def _ack(self, inbox: MemoryObjectReceiveStream[tuple[str, Any]]) -> int:
        kind, message = await inbox.receive()
        if kind == "file_reply":
            raise _failed(message)
        if kind != "file_ack":
            raise FileTransferError("io", f"{kind} during an upload")
        return int(message.bytes)

    async def _read(self) -> None:
        try:
            while True:
                event = self._conn.receive_data(await self._ws.receive())
                if isinstance(event, Dropped):
                    continue
                if event.kind == "disconnect":
                    raise ConnectionClosed(1000, event.payload().reason)
                if event.kind in ("file_reply", "file_data", "file_ack"):
                    message = event.payload()
                    inbox = self._inboxes.get(message.request_id)
                    if inbox is not None:  # its request may end meanwhile: for no one
                        with contextlib.suppress(anyio.BrokenResourceError,
                                                 anyio.ClosedResourceError):
                            await inbox.send((event.kind, message))
        except ConnectionClosed as exc:
            self.closed = exc
            for inbox in list(self._inboxes.values()):
                inbox.close()  # a waiting request ends with EndOfStream: see _ended

    async def _heartbeats(self, interval: float) -> None:
        with contextlib.suppress(ConnectionClosed):  # the reader tells the requests
            while self.closed is None:
                await anyio.sleep(interval)
                await self.send("heartbeat", pb.Heartbeat())

    async def drop(self) -> None:
        """Cut the connection at once, as a lost network would (transfers stop mid-way)."""
        await self._ws.abort()


def _failed(reply: Any) -> FileTransferError:
    return FileTransferError(reply.error or "io", reply.message)


@asynccontextmanager
async def open_files(server: str, token: str, *, heartbeat: float = 15.0,
                     ca_bundle: str | None = None) -> AsyncIterator[FileClient]:
    """Connect a FILE_TRANSFER viewer with a viewer token (minted with
    ``file_transfer=true``); the client lives inside the block. A request that the
    connection's end cuts off raises :class:`~remote_core.wsclient.ConnectionClosed`."""
    if ca_bundle is None:
        ca_bundle = ViewerSettings.load().ca_bundle
    ws, conn, _ = await join(server, pb.SessionRequest(session_token=token,
                                                       session_type=pb.FILE_TRANSFER), ca_bundle)
    client = FileClient(ws, conn)
    try:
        async with beside(client._read, partial(client._heartbeats, heartbeat)):
            yield client
    finally:
        with anyio.CancelScope(shield=True):
            await ws.close()

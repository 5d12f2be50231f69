"""FILE_TRANSFER sessions: a file viewer browses the agent's roots and moves files.

One :class:`FileService` per connection, shaped like the BACKSTAGE terminals'
:class:`~.backstage.Backstage`: the server says ``FileOpen`` for a viewer, the
viewer's ``FileRequest``, ``FileData`` (uploads) and ``FileAck`` (downloads)
follow, and ``FileClose`` or the connection's end stops its transfers (an
upload's partial file stays for a resume). Every disk access runs in a worker
thread (:mod:`.file_ops`, :mod:`.file_upload`), and file data goes out through
the session's bulk lane (:mod:`.bulk`), behind the picture.

Replies, as the proto's ``FileReply`` comment has them: LIST and MKDIR are
answered once, with done=true. A DOWNLOAD's first reply (size, version,
offset, archive) has done=false; the transfer then ends with the FileData
that has last=true, or with an error reply (done=true), never both. An
UPLOAD's first reply (offset, and the kept prefix's sha256 on a resume) has
done=false; after the viewer's last chunk a second reply says done=true with
the SHA-256 of the file in place, or an error. CANCEL names the transfer to
stop by its request_id: that transfer ends with "cancelled" (done=true); a
CANCEL for a request that is over already is not answered (its final reply
is out). A request whose request_id is still in use is dropped unanswered (an
answer would be taken for the running one's).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from remote_core.protocol import pb
from remote_core.protocol.files import CHUNK, WINDOW, FileError, split_path
from remote_core.protocol.window import Window, WindowError
from remote_core.textrules import escaped

from .file_ops import list_dir, list_roots, make_dir, open_source, refuse_names
from .file_roots import Roots
from .file_upload import Claims, Upload, start_upload

__all__ = ["MAX_TRANSFERS", "FileChannel", "FileService"]

log = logging.getLogger(__name__)

MAX_TRANSFERS = 4
"""Downloads and uploads one viewer may run at once; one more is answered "busy"."""

Send = Callable[[str, Any], Awaitable[None]]


@dataclass(eq=False)
class _Request:
    """One request being served: its scope (a CANCEL or the viewer's leaving ends it)."""

    request_id: int
    op: int
    path: str
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    cancelled: bool = False
    finishing: bool = False
    """Past the point of no return (the last chunk is going out, the file is being put
    in place): a CANCEL now comes too late."""
    window: Window = field(default_factory=lambda: Window(WINDOW))
    room: anyio.Event = field(default_factory=anyio.Event)
    inbox: tuple[MemoryObjectSendStream[Any], MemoryObjectReceiveStream[Any]] | None = None
    upload: Upload | None = None

    @property
    def transfer(self) -> bool:
        return self.op in (pb.FILE_OP_DOWNLOAD, pb.FILE_OP_UPLOAD)


class FileChannel:
    """One file viewer: its roots, its requests by id, its transfers' windows."""

    def __init__(self, viewer_id: str, technician: str, roots: Roots, send: Send,
                 send_data: Send, *, outer: anyio.abc.TaskGroup, windows: bool,
                 max_transfers: int, partials: Claims) -> None:
        self.viewer_id = viewer_id
        self.technician = technician
        self.roots = roots
        self._send = send
        self._send_data = send_data
        self.windows = windows
        self.max_transfers = max_transfers
        self._partials = partials
        self._outer = outer
        self.requests: dict[int, _Request] = {}
        self._group: anyio.abc.TaskGroup | None = None
        self._scope = anyio.CancelScope()
        self.closed = False

    async def run(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        """Serve requests until :meth:`close`."""
        with self._scope:
            async with anyio.create_task_group() as group:
                self._group = group
                task_status.started()
                await anyio.sleep_forever()

    def close(self) -> None:
        """Stop every request now; uploads leave their partial files for a resume."""
        self.closed = True
        self._scope.cancel()

    # -- the viewer's messages ---------------------------------------------------------
    def request(self, message: Any) -> None:
        request_id, op = message.request_id, message.op
        if self.closed or self._group is None:
            return
        if op == pb.FILE_OP_CANCEL:
            running = self.requests.get(request_id)
            if running is not None and not running.finishing:
                running.cancelled = True
                running.scope.cancel()
            return
        if request_id in self.requests:
            log.warning("file viewer %s: request %d dropped: that id is in use", self.viewer_id,
                        request_id)
            return
        request = _Request(request_id, op, message.path)
        if request.transfer and sum(r.transfer for r in self.requests.values()) \
                >= self.max_transfers:
            self._group.start_soon(self._reply, request, pb.FileReply(
                error="busy", message=f"at most {self.max_transfers} transfers at once",
                done=True))
            return
        self.requests[request_id] = request
        self._group.start_soon(self._serve, request, message)

    def data(self, message: Any) -> None:
        """Upload data: queued for its writer, within the transfer's window."""
        request = self.requests.get(message.request_id)
        if request is None or request.inbox is None:
            log.debug("file viewer %s: data for request %d ignored: no upload waits for it",
                      self.viewer_id, message.request_id)
            return
        if len(message.data) > CHUNK:
            self._broken(f"upload {message.request_id} sent a chunk of {len(message.data)} "
                         f"bytes (at most {CHUNK})")
            return
        try:
            request.window.sent(len(message.data))
        except WindowError as exc:
            self._broken(f"upload {message.request_id} overran its window: {exc}")
            return
        request.inbox[0].send_nowait(message)

    def ack(self, message: Any) -> None:
        request = self.requests.get(message.request_id)
        if request is None or request.op != pb.FILE_OP_DOWNLOAD:
            return
        try:
            request.window.acked(message.bytes)
        except WindowError as exc:
            log.warning("file viewer %s: acknowledgement ignored: %s", self.viewer_id, exc)
            return
        request.room.set()

    def _broken(self, reason: str) -> None:
        """The viewer broke the protocol: the channel is closed and the server told (it
        closes that viewer with the reason)."""
        log.warning("file viewer %s: %s", self.viewer_id, reason)
        if not self.closed:
            self.close()
            self._outer.start_soon(self._say_closed, reason)

    async def _say_closed(self, reason: str) -> None:
        await self._send("file_close", pb.FileClose(viewer_id=self.viewer_id, reason=reason))

    # -- serving -----------------------------------------------------------------------
    async def _reply(self, request: _Request, reply: Any) -> None:
        reply.viewer_id, reply.request_id = self.viewer_id, request.request_id
        await self._send("file_reply", reply)

    async def _serve(self, request: _Request, message: Any) -> None:
        final: Any = None  # the request's last reply, sent once its partial file is settled
        try:
            with request.scope:
                if request.op == pb.FILE_OP_LIST:
                    await self._list(request)
                elif request.op == pb.FILE_OP_MKDIR:
                    await self._mkdir(request)
                elif request.op == pb.FILE_OP_DOWNLOAD:
                    await self._download(request, message)
                elif request.op == pb.FILE_OP_UPLOAD:
                    await self._upload(request, message)
                else:
                    raise FileError("invalid-name", f"no such operation ({request.op})")
            if request.cancelled:
                final = pb.FileReply(error="cancelled", message="the transfer was cancelled",
                                     done=True, path=request.path)
        except FileError as exc:
            log.info("file viewer %s: request %d (%s) refused: %s: %s", self.viewer_id,
                     request.request_id, request.path, exc.code, exc.message)
            final = pb.FileReply(error=exc.code, message=exc.message, done=True,
                                 path=request.path)
        except Exception as exc:  # a bug must end this request, not the connection
            log.exception("file viewer %s: request %d (%s) failed", self.viewer_id,
                          request.request_id, request.path)
            final = pb.FileReply(error="io", message=f"failed: {exc}", done=True,
                                 path=request.path)
        finally:
            self.requests.pop(request.request_id, None)
            if request.upload is not None:
                with anyio.CancelScope(shield=True):
                    upload = request.upload
                    await anyio.to_thread.run_sync(
                        upload.discard if request.cancelled else upload.leave)
                    self._partials.release(upload.partial)
        if final is not None:
            # After the partial file is discarded or left and released: a viewer that asks
            # again for the same path on this answer finds it free, not "busy".
            await self._reply(request, final)

    async def _list(self, request: _Request) -> None:
        if split_path(request.path):
            target = await anyio.to_thread.run_sync(self.roots.resolve, request.path)
            entries = await anyio.to_thread.run_sync(list_dir, target)
        else:
            entries = await anyio.to_thread.run_sync(list_roots, self.roots)
        await self._reply(request, pb.FileReply(entries=entries, done=True, path=request.path))

    async def _mkdir(self, request: _Request) -> None:
        if len(split_path(request.path)) < 2:
            raise FileError("exists", f"{request.path} exists (a root, or the roots)")
        refuse_names(request.path, windows=self.windows)
        target = await anyio.to_thread.run_sync(self.roots.resolve, request.path)
        await anyio.to_thread.run_sync(make_dir, target)
        await self._reply(request, pb.FileReply(done=True, path=target.virtual))

    async def _download(self, request: _Request, message: Any) -> None:
        target = await anyio.to_thread.run_sync(self.roots.resolve, request.path)
        with anyio.CancelScope(shield=True):  # what it opens is closed below, come what may
            source = await anyio.to_thread.run_sync(
                lambda: open_source(target, offset=message.offset, version=message.version))
        try:
            await self._reply(request, pb.FileReply(
                size=source.size, version=source.version, offset=message.offset,
                archive=source.archive, path=target.virtual))
            offset, window = message.offset, request.window
            while True:
                while window.room == 0:
                    request.room = anyio.Event()
                    await request.room.wait()
                data = await anyio.to_thread.run_sync(source.read, min(CHUNK, window.room))
                last = source.ended
                if last:
                    request.finishing = True
                    await anyio.to_thread.run_sync(source.finish)
                window.sent(len(data))
                await self._send_data("file_data", pb.FileData(
                    viewer_id=self.viewer_id, request_id=request.request_id, offset=offset,
                    data=data, last=last, sha256=source.digest.hexdigest() if last else ""))
                offset += len(data)
                if last:
                    break
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(source.close)
        log.info("file transfer: %s downloaded %s%s (%d bytes, sha256 %s)", self.technician,
                 target.virtual, " as a zip" if source.archive else "", offset,
                 source.digest.hexdigest())

    async def _upload(self, request: _Request, message: Any) -> None:
        with anyio.CancelScope(shield=True):  # what it opens is closed in _serve
            request.upload = upload = await anyio.to_thread.run_sync(lambda: start_upload(
                self.roots, request.path, message.size, resume=message.resume,
                overwrite=message.overwrite, windows=self.windows, claim=self._partials))
        request.inbox = anyio.create_memory_object_stream[Any](max_buffer_size=WINDOW)
        await self._reply(request, pb.FileReply(
            offset=upload.length, sha256=upload.prefix_sha256 if upload.length else "",
            size=upload.size, path=upload.target.virtual))
        receive = request.inbox[1]
        while True:
            chunk = await receive.receive()
            await anyio.to_thread.run_sync(upload.write, chunk.offset, chunk.data)
            request.window.acked(len(chunk.data))
            # through the bulk lane, as download data goes: an upload is paced from here
            await self._send_data("file_ack", pb.FileAck(viewer_id=self.viewer_id,
                                                         request_id=request.request_id,
                                                         bytes=len(chunk.data)))
            if chunk.last:
                break
        request.finishing = True
        with anyio.CancelScope(shield=True):
            try:
                digest = await anyio.to_thread.run_sync(upload.commit, chunk.sha256)
            finally:
                request.upload = None
                self._partials.release(upload.partial)
        log.info("file transfer: %s uploaded %s (%d bytes, sha256 %s)", self.technician,
                 upload.target.virtual, upload.length, digest)
        await self._reply(request, pb.FileReply(done=True, size=upload.length, sha256=digest,
                                                path=upload.target.virtual))


class FileService:
    """The agent's file viewers, by viewer id, for one connection.

    :param roots: makes the roots a new viewer is served (read at each ``FileOpen``, so
        a root created since is seen).
    :param send: sends replies, acknowledgements and closes (urgent, like any message).
    :param send_data: sends download data and an upload's acknowledgements (default:
        ``send``); the session passes its bulk lane here (:mod:`.bulk`), so transfers
        both ways yield to the picture.
    :param windows: judge names by Windows' rules too (the seam for tests elsewhere).
    """

    def __init__(self, roots: Callable[[], Roots], send: Send, send_data: Send | None = None,
                 *, windows: bool = sys.platform == "win32",
                 max_transfers: int = MAX_TRANSFERS) -> None:
        self._roots = roots
        self._send = send
        self._send_data = send_data or send
        self.windows = windows
        self.max_transfers = max_transfers
        self.channels: dict[str, FileChannel] = {}
        self._partials = Claims()

    async def open(self, group: anyio.abc.TaskGroup, message: Any) -> None:
        viewer_id = escaped(message.viewer_id, 64)
        if not viewer_id or viewer_id in self.channels:
            log.warning("FileOpen for %r ignored: no viewer id, or one already open", viewer_id)
            return
        technician = escaped(message.technician_name, 64) or "a technician"
        roots = await anyio.to_thread.run_sync(self._roots)
        if roots.missing:
            log.warning("file roots left out (no such folder): %s", ", ".join(roots.missing))
        channel = FileChannel(viewer_id, technician, roots, self._send, self._send_data,
                              outer=group, windows=self.windows,
                              max_transfers=self.max_transfers, partials=self._partials)
        self.channels[viewer_id] = channel
        log.warning("file transfer %s opened for %s (roots: %s)", viewer_id, technician,
                    ", ".join(f"{n}={p}" for n, p in sorted(roots.by_name.items())) or "none")
        await group.start(self._run, channel)

    async def _run(self, channel: FileChannel, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        try:
            await channel.run(task_status=task_status)
        finally:
            if self.channels.get(channel.viewer_id) is channel:
                del self.channels[channel.viewer_id]
            log.info("file transfer %s closed", channel.viewer_id)

    def request(self, message: Any) -> None:
        channel = self.channels.get(message.viewer_id)
        if channel is not None:
            channel.request(message)

    def data(self, message: Any) -> None:
        channel = self.channels.get(message.viewer_id)
        if channel is not None:
            channel.data(message)

    def ack(self, message: Any) -> None:
        channel = self.channels.get(message.viewer_id)
        if channel is not None:
            channel.ack(message)

    async def close(self, viewer_id: str) -> None:
        channel = self.channels.pop(viewer_id, None)
        if channel is not None:
            channel.close()

    async def close_all(self) -> None:
        """The connection ended: every transfer stops (partial uploads stay)."""
        for viewer_id in list(self.channels):
            await self.close(viewer_id)

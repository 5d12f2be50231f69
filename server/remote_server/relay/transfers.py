"""What the relay keeps of one file viewer's transfers, with no I/O.

The server does not read files; it sees every request, reply and chunk pass
between a FILE_TRANSFER viewer and the agent, and holds each side to the rules
on the way: the window per transfer (:mod:`remote_core.protocol.window`), the
chunk size, the declared size of an upload, and the operator's cap on any one
transfer (``max_transfer_bytes``). It also knows when a transfer ends and how,
which is what the audit log records: who moved which path, how many bytes, and
the SHA-256 both ends agreed on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from remote_core.protocol import pb
from remote_core.protocol.files import CHUNK, WINDOW
from remote_core.protocol.window import Window, WindowError
from remote_core.textrules import escaped

__all__ = ["MAX_OPEN", "Ended", "Transfer", "TransferBook", "TransferError"]

MAX_OPEN = 16
"""Requests one file viewer may have open at once (the agent runs fewer at a time)."""


class TransferError(ValueError):
    """A message that breaks the rules: ``code`` is the ``FileReply.error`` it earns."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Transfer:
    """One open request of a file viewer."""

    request_id: int
    op: int
    path: str
    size: int = 0
    """An upload's declared size; a download's size from the agent (0: an archive, unknown)."""
    offset: int = 0
    """Where the data starts (a resumed transfer's first byte)."""
    moved: int = 0
    """Bytes relayed since ``offset``."""
    window: Window = field(default_factory=lambda: Window(WINDOW))

    @property
    def upload(self) -> bool:
        return self.op == pb.FILE_OP_UPLOAD

    @property
    def direction(self) -> str:
        return "upload" if self.upload else "download"


@dataclass(frozen=True)
class Ended:
    """A transfer (or request) that is over: what the audit log says of it."""

    transfer: Transfer
    error: str = ""
    message: str = ""
    sha256: str = ""

    @property
    def bytes(self) -> int:
        return self.transfer.offset + self.transfer.moved

    def text(self) -> str:
        """One line for a person (a recording's note): what moved, or why it did not."""
        transfer = self.transfer
        path = escaped(transfer.path, 1000)
        if self.error:
            doing = _DOING.get(transfer.op, "handle")
            return f"could not {doing} {path}: {escaped(self.message or self.error, 300)}"
        if transfer.op == pb.FILE_OP_MKDIR:
            return f"created the folder {path}"
        return f"{_DONE.get(transfer.op, 'handled')} {path} ({self.bytes} bytes)"


_DOING: dict[int, str] = {pb.FILE_OP_UPLOAD: "upload", pb.FILE_OP_DOWNLOAD: "download",
                         pb.FILE_OP_MKDIR: "create the folder"}
_DONE: dict[int, str] = {pb.FILE_OP_UPLOAD: "uploaded", pb.FILE_OP_DOWNLOAD: "downloaded"}


class TransferBook:
    """The open requests of one file viewer, by request id.

    :param cap: the most bytes one transfer may move (``max_transfer_bytes``).
    """

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.open: dict[int, Transfer] = {}

    # -- viewer to agent ---------------------------------------------------------------
    def request(self, message: Any) -> None:
        """A viewer's request, before it goes to the agent.

        :raises TransferError: it is refused here (the server answers it itself).
        """
        if message.op == pb.FILE_OP_CANCEL:
            if message.request_id not in self.open:
                raise TransferError("not-found", f"no open request {message.request_id} to "
                                                 "cancel")
            return
        if message.request_id in self.open:
            raise TransferError("busy", f"request {message.request_id} is still open")
        if len(self.open) >= MAX_OPEN:
            raise TransferError("busy", f"{MAX_OPEN} requests are open; wait for one to end")
        if message.op == pb.FILE_OP_UPLOAD and message.size > self.cap:
            raise TransferError("too-large", f"an upload of {message.size} bytes; this server "
                                             f"moves at most {self.cap} in one transfer")
        self.open[message.request_id] = Transfer(message.request_id, message.op, message.path,
                                                 size=message.size)

    def viewer_data(self, message: Any) -> Transfer:
        """An upload's chunk from the viewer.

        :raises TransferError: no such upload, too big a chunk, past the declared size,
            or beyond the window.
        """
        transfer = self._transfer(message.request_id, upload=True)
        self._chunk(transfer, message)
        if transfer.offset + transfer.moved > transfer.size:
            raise TransferError("too-large", f"more bytes than the {transfer.size} declared")
        return transfer

    def viewer_ack(self, message: Any) -> None:
        """The viewer wrote more of a download.

        :raises TransferError: no such download, or more acknowledged than was sent.
        """
        transfer = self._transfer(message.request_id, upload=False)
        try:
            transfer.window.acked(message.bytes)
        except WindowError as exc:
            raise TransferError("io", str(exc)) from None

    # -- agent to viewer ---------------------------------------------------------------
    def reply(self, message: Any) -> Ended | None:
        """The agent's answer to a request: the request's end when it is its last.

        :raises TransferError: it answers no open request, or starts a download above
            the cap (the caller cancels it at the agent and tells the viewer).
        """
        transfer = self.open.get(message.request_id)
        if transfer is None:
            raise TransferError("not-found", f"a reply to no open request "
                                             f"({message.request_id})")
        if message.error or message.done:
            del self.open[message.request_id]
            return Ended(transfer, message.error, message.message, message.sha256)
        if transfer.op == pb.FILE_OP_DOWNLOAD:
            transfer.size, transfer.offset = message.size, message.offset
            if message.size > self.cap:
                del self.open[message.request_id]
                raise TransferError("too-large", f"a download of {message.size} bytes; this "
                                                 f"server moves at most {self.cap} in one "
                                                 "transfer")
        elif transfer.upload:
            transfer.offset = message.offset
        else:  # a listing or a new folder: one reply
            del self.open[message.request_id]
            return Ended(transfer)
        return None

    def agent_data(self, message: Any) -> Ended | None:
        """A download's chunk from the agent: the download's end with its last chunk.

        :raises TransferError: no such download, too big a chunk, beyond the window, or
            past the cap (the caller cancels it).
        """
        transfer = self._transfer(message.request_id, upload=False)
        self._chunk(transfer, message)
        if transfer.offset + transfer.moved > self.cap:
            del self.open[message.request_id]
            raise TransferError("too-large", f"a download past {self.cap} bytes, the most "
                                             "this server moves in one transfer")
        if message.last:
            del self.open[message.request_id]
            return Ended(transfer, sha256=message.sha256)
        return None

    def agent_ack(self, message: Any) -> None:
        """The agent wrote more of an upload.

        :raises TransferError: no such upload, or more acknowledged than was sent.
        """
        transfer = self._transfer(message.request_id, upload=True)
        try:
            transfer.window.acked(message.bytes)
        except WindowError as exc:
            raise TransferError("io", str(exc)) from None

    # -- the rules both ways -----------------------------------------------------------
    def _transfer(self, request_id: int, *, upload: bool) -> Transfer:
        transfer = self.open.get(request_id)
        if transfer is None or transfer.op not in (pb.FILE_OP_UPLOAD, pb.FILE_OP_DOWNLOAD) \
                or transfer.upload is not upload:
            kind = "upload" if upload else "download"
            raise TransferError("not-found", f"no open {kind} {request_id}")
        return transfer

    @staticmethod
    def _chunk(transfer: Transfer, message: Any) -> None:
        if len(message.data) > CHUNK:
            raise TransferError("io", f"a chunk of {len(message.data)} bytes; at most {CHUNK}")
        try:
            transfer.window.sent(len(message.data))
        except WindowError as exc:
            raise TransferError("io", str(exc)) from None
        transfer.moved += len(message.data)

"""One connected socket as the relay sees it: its protocol state and its outbox."""

from __future__ import annotations

import logging
import time

from google.protobuf.message import Message

from remote_core.protocol import CloseCode, Connection, pb
from remote_core.protocol.backstage import Window
from remote_core.video import CODEC_SLOTS

from .outbox import Outbox
from .transfers import TransferBook

__all__ = ["Link"]

log = logging.getLogger(__name__)


class Link:
    """An agent's or a viewer's socket. The relay only ever queues; the socket's writer sends.

    :param link_id: the viewer id, or the agent id for an agent.
    """

    def __init__(self, conn: Connection, budget: int, link_id: str,
                 client_ip: str | None = None) -> None:
        self.conn = conn
        self.outbox = Outbox(budget)
        self.id = link_id
        self.client_ip = client_ip
        self.last_heard = time.monotonic()
        self.actor: str | None = None  # the viewer's username, for the audit log
        self.user_id: str | None = None  # the viewer's user, whose standing it keeps
        self.next_keyframe_request = 0.0
        self.window: Window | None = None
        """A BACKSTAGE viewer's terminal output in flight (the agent's flow control, checked)."""
        self.transfers: TransferBook | None = None
        """A FILE_TRANSFER viewer's open requests (both ends' rules, checked)."""
        self._codecs: tuple[str, ...] = ()
        self._decodes = CODEC_SLOTS

    @property
    def codecs(self) -> tuple[str, ...]:
        """The codecs a viewer decodes, by wire name (``SessionRequest.codecs``); empty:
        the codec slots, as a viewer that lists none is SPEC's viewer."""
        return self._codecs

    @codecs.setter
    def codecs(self, codecs: tuple[str, ...]) -> None:
        self._codecs = codecs
        self._decodes = frozenset(codecs) or CODEC_SLOTS

    def decodes(self, codec: str | None) -> bool:
        """Whether this viewer may be sent a frame of ``codec`` (``codec_of``'s answer;
        ``None``, unreadable, goes on: the viewer drops what it cannot parse)."""
        return codec is None or codec in self._decodes

    @property
    def closed(self) -> bool:
        return self.outbox.closed

    @property
    def close_reason(self) -> str | None:
        """Why the server closed this socket, once it has."""
        return self.outbox.close_reason

    def send(self, kind: str, payload: Message, *, lossy: bool = False) -> bool:
        """Serialize and queue a message from the server; False if it was not queued."""
        if self.outbox.closed:
            return False
        return self.outbox.put(self.conn.send(kind, payload), lossy=lossy)

    def forward(self, data: bytes, *, lossy: bool = False) -> bool:
        """Queue already-serialized ``Message`` bytes from the other side."""
        return self.outbox.put(data, lossy=lossy)

    def close(self, reason: str, code: int = CloseCode.NORMAL, *,
              notify: bool = True, drain: bool = True) -> None:
        """End the socket: a ``Disconnect{reason}`` (when ``notify``), then the close frame."""
        if self.outbox.closed:
            return
        farewell = None
        if notify:
            try:
                farewell = self.conn.send("disconnect", pb.Disconnect(reason=reason))
            except Exception:  # the protocol state may already be closed
                farewell = None
        self.outbox.close(code, reason, farewell=farewell, drain=drain)
        self.conn.close()

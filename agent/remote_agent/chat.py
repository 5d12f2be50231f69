"""Chat between the technician and the person at the machine.

Messages from the technician go to every listener (the console, a window);
the person's replies go back as ``ChatMessage{sender: "client"}``. The
channel outlives connections: it is attached to whichever session is live.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from remote_core.protocol import pb

__all__ = ["ChatChannel", "chat_message"]

log = logging.getLogger(__name__)

Listener = Callable[[str, str], None]
"""``(sender, text)``: called on the event loop; must not block."""


def chat_message(sender: str, content: str) -> Any:
    """A ``ChatMessage`` from this machine, stamped now."""
    return pb.ChatMessage(id=str(uuid.uuid4()), sender=sender, content=content,
                          timestamp=int(time.time()))


class ChatChannel:
    def __init__(self) -> None:
        self._listeners: list[Listener] = []
        self._send: Callable[[Any], Awaitable[None]] | None = None

    def listen(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def attach(self, send: Callable[[Any], Awaitable[None]]) -> None:
        self._send = send

    def detach(self) -> None:
        self._send = None

    def received(self, message: Any) -> None:
        """A ``ChatMessage`` arrived from the technician."""
        sender = message.sender or "technician"
        for listener in self._listeners:
            try:
                listener(sender, message.content)
            except Exception:
                log.exception("a chat listener failed")

    async def reply(self, text: str) -> bool:
        """Send the person's reply; ``False`` when no session is live."""
        if self._send is None:
            return False
        await self._send(chat_message("client", text))
        return True

"""Caps on WebSockets that have not yet sent their ``SessionRequest`` (T36).

An unauthenticated socket costs the server a connection, buffers and a
first-message timer for up to ``first_message_timeout`` seconds; a flood of
silent ones would hold that much for free. Only these *pending* sockets are
counted: a real agent or viewer sends its ``SessionRequest`` at once, so it
leaves the count almost as soon as it joins it (when the request arrives, not
when it is answered: in a storm, admissions wait on the database, and holding
their slots meanwhile refused real agents). That is what lets the per-address
cap hold even where an untrusted proxy makes every client one address: a crowd
of real clients behind it is rarely more than a handful pending at any moment,
while a flood is all pending. A global cap bounds the sum across every address.

Pure bookkeeping in one event loop, no sockets: :mod:`.ws` admits a socket
before accepting it and releases its slot on its first message or the close.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from remote_core.logsafe import peer_text

from .logonce import Once

__all__ = ["PendingSockets", "Slot"]

log = logging.getLogger(__name__)

PER_ADDRESS_SETTING = "REMOTE_SUPPORT_MAX_PENDING_SOCKETS_PER_IP"
TOTAL_SETTING = "REMOTE_SUPPORT_MAX_PENDING_SOCKETS"
ALL_ADDRESSES = "*"
"""The key of the global cap's once-only log line (never a client address)."""


@dataclass
class Slot:
    """One pending socket's place in the count; :meth:`release` is idempotent."""

    owner: PendingSockets
    address: str
    released: bool = field(default=False)

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.owner._release(self.address)


class PendingSockets:
    """Counts pending sockets per client address and in all; admits while both are under cap.

    Memory is bounded by ``total``: an address whose count drops to zero is forgotten.
    """

    def __init__(self, per_address: int, total: int) -> None:
        if per_address < 1 or total < 1:
            raise ValueError("pending-socket caps must be at least 1")
        self.per_address = per_address
        self.total = total
        self.count = 0
        self._by_address: dict[str, int] = {}
        self._logged = Once(limit=1000)

    def pending(self, address: str) -> int:
        return self._by_address.get(address, 0)

    def admit(self, address: str) -> Slot | None:
        """A slot for one more pending socket from ``address``, or None when a cap is reached
        (the refusal is logged once per address, and once for the global cap)."""
        held = self._by_address.get(address, 0)
        if held >= self.per_address:
            if self._logged.first(address):
                log.warning("refusing WebSockets from %s: %d of its sockets have not sent their "
                            "session_request yet, the cap per address (%s); further refusals "
                            "of this address are not logged", peer_text(address), held,
                            PER_ADDRESS_SETTING,
                            extra={"event": "pending_sockets_capped", "client_ip": address})
            return None
        if self.count >= self.total:
            if self._logged.first(ALL_ADDRESSES):
                log.warning("refusing WebSockets: %d sockets have not sent their "
                            "session_request yet, the cap for all addresses (%s); first "
                            "refused: %s; further refusals are not logged", self.count,
                            TOTAL_SETTING, peer_text(address),
                            extra={"event": "pending_sockets_capped", "client_ip": address})
            return None
        self._by_address[address] = held + 1
        self.count += 1
        return Slot(self, address)

    def _release(self, address: str) -> None:
        left = self._by_address[address] - 1
        if left:
            self._by_address[address] = left
        else:
            del self._by_address[address]
        self.count -= 1

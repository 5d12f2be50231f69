"""Which nodes of the cluster are alive: announcements with a lease (sans-I/O).

Every node announces itself on the bus every third of its lease; a node not
heard from for a whole lease is gone, whatever it last said, so a node killed
with SIGKILL leaves nothing set behind. The live node with the lowest id is
the one that cleans up after a dead one, so exactly one does.
"""

from __future__ import annotations

__all__ = ["Members"]


class Members:
    """The nodes heard from, and until when each one's lease runs."""

    def __init__(self, me: str, lease: float) -> None:
        self.me = me
        self.lease = lease
        self._until: dict[str, float] = {}

    def heard(self, node: str, lease: float, now: float) -> bool:
        """Renew ``node``'s lease; True when it is new (joined, or back)."""
        new = node not in self._until
        self._until[node] = now + lease
        return new and node != self.me

    def left(self, node: str) -> bool:
        """``node`` said goodbye; True when it was a member."""
        return self._until.pop(node, None) is not None and node != self.me

    def expired(self, now: float) -> list[str]:
        """Forget and return the nodes whose lease has run out."""
        gone = sorted(n for n, until in self._until.items() if until <= now and n != self.me)
        for node in gone:
            del self._until[node]
        return gone

    def alive(self) -> set[str]:
        return {*self._until, self.me}

    def sweeper(self) -> str:
        """The live node that cleans up after dead ones."""
        return min(self.alive())

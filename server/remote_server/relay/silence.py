"""Closing the sockets whose peer went silent: one sweep over them all, not a timer each.

A timer per socket wakes about once per heartbeat timeout for every connected
peer: 10,000 idle agents meant hundreds of task wake-ups a second, each a
coroutine resumed and a new timer armed, and a task held per socket. One sweep
every so often costs one comparison per socket, and a peer is closed at most
one sweep period after its silence passed the timeout.
"""

from __future__ import annotations

import time

import anyio

from remote_core.protocol import CloseCode

from .link import Link

__all__ = ["SilenceWatch"]

SWEEPS_PER_TIMEOUT = 45
"""How finely the timeout is kept: a sweep every second at the shipped 45 s."""


class SilenceWatch:
    """The sockets of one registry, each closed once silent for ``silence`` seconds."""

    def __init__(self, silence: float) -> None:
        self.silence = silence
        self.every = silence / SWEEPS_PER_TIMEOUT
        self._links: set[Link] = set()

    def __len__(self) -> int:
        return len(self._links)

    def watch(self, link: Link) -> None:
        self._links.add(link)

    def forget(self, link: Link) -> None:
        self._links.discard(link)

    def sweep(self, now: float) -> list[Link]:
        """Close every link silent for the timeout by ``now`` (monotonic); return them."""
        heard_by = now - self.silence
        silent = [link for link in self._links if link.last_heard <= heard_by]
        for link in silent:
            self._links.discard(link)
            link.close(f"no message for {self.silence:g} s (heartbeat timeout)",
                       CloseCode.POLICY_VIOLATION, drain=False)
        return silent

    async def run(self) -> None:
        """Sweep until cancelled (one task per server, beside the registry's others)."""
        while True:
            await anyio.sleep(self.every)
            self.sweep(time.monotonic())

"""Many managed agents in one process: the fault tests' and the reconnect benchmark's fleet.

Each fleet agent is the real agent from the socket up: :class:`AgentSession`
(handshake, heartbeats, status reports, display info) driven by
:func:`run_agent` with its own :class:`Backoff`, so a fleet reconnects
exactly as installed agents do. Only the screen is absent: a fleet agent
reports one display and has no input, clipboard or consent prompt, which is
what lets a thousand of them share two cores. The fleet records every
connection attempt and every accepted connection (monotonic seconds), which
is what the reconnect-rate measurements are made of.
"""

from __future__ import annotations

import logging
import math
import resource
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc

from remote_core.interfaces import CaptureSource
from remote_core.types import DisplayDesc

from .backoff import Backoff
from .config import AgentConfig
from .devices import Devices
from .runner import run_agent
from .session import AgentSession, Ending, Timing

__all__ = ["Fleet", "FleetAgent", "HeadlessCapture", "RecordingBackoff", "herd_bound", "per_window",
           "raise_fd_limit"]

log = logging.getLogger(__name__)


class HeadlessCapture(CaptureSource):
    """One display that is never streamed: a fleet agent has no screen."""

    def displays(self) -> list[DisplayDesc]:
        return [DisplayDesc(1, "headless", 0, 0, 1920, 1080, is_primary=True)]

    def grab(self, display_id: int) -> tuple[Any, None]:
        raise RuntimeError("a fleet agent has no screen to stream")

    def wait_for_change(self, timeout: float) -> bool:
        return False


class RecordingBackoff(Backoff):
    """The shipped policy, keeping every delay it draws with when it drew it: the evidence
    that an agent waited a jittered delay before it came back."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.drawn: list[tuple[float, float]] = []

    def next_delay(self) -> float:
        delay = super().next_delay()
        self.drawn.append((time.monotonic(), delay))
        return delay


@dataclass
class FleetAgent:
    """One agent of the fleet and what happened to it."""

    index: int
    config: AgentConfig
    backoff: Backoff
    attempts: list[float] = field(default_factory=list)
    connections: list[float] = field(default_factory=list)
    online: bool = False
    session_id: str = ""
    ending: Ending | None = None
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)


class _FleetSession(AgentSession):
    """The real session, counting its attempt and its acceptance for the fleet."""

    def __init__(self, agent: FleetAgent, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._agent = agent

    async def run(self) -> Ending:
        self._agent.attempts.append(time.monotonic())
        try:
            return await super().run()
        finally:
            self._agent.online = False

    async def _handshake(self) -> None:
        await super()._handshake()
        self._agent.connections.append(time.monotonic())
        self._agent.session_id = self.session_id
        self._agent.online = True


class Fleet:
    """``count`` managed agents of ``server``, each with its token (a ``cak_`` key each, or
    one shared key for all).

    :param ramp: the agents start spread over this many seconds, as a fleet that was
        installed over time would be connected.
    :param make_backoff: each agent's own backoff (default: the shipped policy, recording
        what it draws).
    :param spread: connect agent ``i`` from ``127.x.y.z`` (the loopback network, any address
        of which is this machine's) so the server sees a fleet of machines, each under its
        per-address limits, not one machine holding thousands of sockets.
    """

    def __init__(self, server: str, tokens: Sequence[str] | str, count: int, *,
                 timing: Timing | None = None, ramp: float = 0.0,
                 make_backoff: Callable[[], Backoff] = RecordingBackoff,
                 agent_ids: Sequence[str] | None = None, spread: bool = False) -> None:
        if isinstance(tokens, str):
            tokens = [tokens] * count
        if len(tokens) != count:
            raise ValueError(f"{count} agents need {count} tokens, got {len(tokens)}")
        ids = list(agent_ids) if agent_ids is not None else [str(uuid.uuid4())
                                                             for _ in range(count)]
        self.tokens = list(tokens)
        self.timing = timing or Timing(displays=3600.0)
        self.ramp = ramp
        self.spread = spread
        self.devices = Devices(capture=HeadlessCapture(), input=None, codecs=[], prompt=None)
        self.max_lag = 0.0
        self.agents = [FleetAgent(i, AgentConfig(agent_id=ids[i], server=server),
                                  make_backoff()) for i in range(count)]

    def online(self) -> int:
        return sum(agent.online for agent in self.agents)

    def attempts_since(self, since: float) -> list[float]:
        return sorted(t for a in self.agents for t in a.attempts if t >= since)

    def connections_since(self, since: float) -> list[float]:
        return sorted(t for a in self.agents for t in a.connections if t >= since)

    async def watch_lag(self, every: float = 0.05) -> None:
        """Record in :attr:`max_lag` how late this event loop wakes a sleeper: attempts due
        within that much of each other may go out together, which a bound must allow for."""
        while True:
            due = time.monotonic() + every
            await anyio.sleep(every)
            self.max_lag = max(self.max_lag, time.monotonic() - due)

    def stop(self, index: int) -> None:
        """Stop one agent for good, as if its machine were switched off."""
        self.agents[index].scope.cancel()

    async def run(self) -> None:
        """Run every agent until cancelled."""
        async with anyio.create_task_group() as group:
            for agent in self.agents:
                group.start_soon(self._run_one, agent)

    async def _run_one(self, agent: FleetAgent) -> None:
        with agent.scope:
            if self.ramp:
                await anyio.sleep(self.ramp * agent.index / len(self.agents))

            def make_session() -> AgentSession:
                return _FleetSession(agent, agent.config, self.tokens[agent.index],
                                     self.devices, timing=self.timing,
                                     local_host=loopback(agent.index) if self.spread else None)

            agent.ending = await run_agent(make_session, attended=False, backoff=agent.backoff)
        agent.online = False


def loopback(index: int) -> str:
    """The ``index``-th address of 127.1.0.0/16 and up (127.0.0.1 stays the machine's own)."""
    number = index + 1
    return f"127.{1 + number // 65536}.{number // 256 % 256}.{number % 256}"


def per_window(times: Sequence[float], start: float, window: float = 0.1) -> list[int]:
    """How many of ``times`` fall in each ``window``-second slot from ``start`` on."""
    if not times:
        return []
    counts = [0] * (int((max(times) - start) / window) + 1)
    for t in times:
        if t >= start:
            counts[int((t - start) / window)] += 1
    return counts


def herd_bound(backoff: Backoff, attempts: Sequence[Sequence[float]], restart: float,
               up: float, window: float = 0.1, sigmas: float = 5.0, lag: float = 1.0) -> float:
    """The most reconnection attempts the backoff policy lets fall in any one ``window``
    once the restarted server is up (at ``up``), with ``sigmas`` standard deviations of slack.

    Each agent's retries after the restart wait delays drawn uniformly from
    ``[base/2, ceiling_k]``; its k-th retry time is a sum of independent delays, no denser
    than the last, so it puts at most ``window / (ceiling_k - base/2)`` of an attempt in a
    window, and only if the retry can reach past ``up`` at all (its first retry plus the
    largest delays since, plus ``lag`` for a busy event loop). The fleet's count in a window
    is then a sum of independent trials with that mean at most. Without jitter, agents
    that fail together retry together, and the first window after ``up`` takes the herd.

    :param attempts: every agent's attempt times (monotonic), before and after ``restart``.
    """
    mean = 0.0
    for times in attempts:
        since = [t for t in times if t > restart]
        if not since:
            continue
        offset = max(0, len(times) - len(since) - 1)  # failures before: a higher ceiling
        reach = since[0] + lag
        p = window / (backoff.base - backoff.base / 2) if reach >= up else 0.0
        for k in range(1, len(since)):
            reach += min(backoff.cap, backoff.base * backoff.factor ** (k + offset))
            if reach >= up:
                p += window / (min(backoff.cap, backoff.base * backoff.factor ** k)
                               - backoff.base / 2)
        mean += min(1.0, p)
    return mean + sigmas * math.sqrt(mean) + 1


def raise_fd_limit(wanted: int) -> int:
    """Raise this process's soft limit on open files towards ``wanted`` (never past the hard
    limit, never system-wide); children started afterwards inherit it. Returns the limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        return target
    return soft

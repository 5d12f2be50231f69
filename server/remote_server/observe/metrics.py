"""The server's Prometheus metrics, built at scrape time from what the server already knows.

One :class:`Metrics` per app, with a registry of its own (several in-process
servers must not share one). Live state (agents, sessions, viewers) is read from
the session registry when Prometheus scrapes; counters come from
:mod:`.counters`. Only the store latency histogram and the event-loop lag gauge
are observed as they happen, neither on the relay's path. No label names an
agent, a user or an address: every label has a fixed, small set of values.
"""

from __future__ import annotations

import functools
import inspect
import platform
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any, cast

import anyio
from prometheus_client import CollectorRegistry, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily
from prometheus_client.registry import Collector

from remote_core.interfaces import Store
from remote_core.protocol import Channel

from .. import __version__
from .counters import AUTH_FAILURES, AUTH_METHODS, RATE_LIMITED, RELAY

__all__ = ["LAG_INTERVAL", "Metrics", "TimedStore"]

LAG_INTERVAL = 0.5
"""Seconds between two event-loop lag measurements."""

_STORE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                  2.5, 5.0, 10.0)


class _Live(Collector):
    """Families read when Prometheus scrapes: live state and the relay's plain counters."""

    def __init__(self, live: Callable[[], Iterable[Any]], waiting: Callable[[], int],
                 owner: Metrics) -> None:
        self._live = live
        self._waiting = waiting
        self._owner = owner

    def collect(self) -> Iterator[Any]:
        sessions = list(self._live())
        yield GaugeMetricFamily("remote_support_agents_online",
                                "Agents connected to this node", value=len(sessions))
        yield GaugeMetricFamily("remote_support_agents_waiting_admission",
                                "Agents whose request arrived, waiting for their turn to be "
                                "admitted (a reconnect storm in progress)",
                                value=self._waiting())
        by_state: Counter[tuple[str, str]] = Counter(
            (s.consent_state, "managed" if s.is_managed else "attended") for s in sessions)
        family = GaugeMetricFamily("remote_support_sessions",
                                   "Live sessions on this node, by consent state and kind",
                                   labels=["state", "kind"])
        for (state, kind), count in sorted(by_state.items()):
            family.add_metric([state, kind], count)
        yield family
        yield GaugeMetricFamily("remote_support_viewers", "Viewers connected to this node",
                                value=sum(len(s.viewers) for s in sessions))
        opened = Counter(viewer.conn.channel for s in sessions for viewer in s.channels.values())
        yield GaugeMetricFamily("remote_support_backstage_terminals",
                                "Backstage terminals (shells) open through this node",
                                value=opened[Channel.TERMINAL])
        yield GaugeMetricFamily("remote_support_file_viewers",
                                "FILE_TRANSFER sessions open through this node",
                                value=opened[Channel.FILES])
        for name, doc, value in (
                ("video_frames_received", "Video frames received from agents", RELAY.frames_in),
                ("video_bytes_received", "Bytes of video frames received from agents",
                 RELAY.bytes_in),
                ("video_frames_relayed_inline", "Video frames received from agents and "
                                                "relayed as they were read, without waking "
                                                "the socket's reader",
                 RELAY.frames_inline),
                ("video_frames_relayed", "Video frames sent to viewers", RELAY.frames_out),
                ("video_bytes_relayed", "Bytes of video frames sent to viewers",
                 RELAY.bytes_out),
                ("video_frames_dropped", "Video frames dropped for a viewer that fell behind "
                                         "(or does not decode their codec)",
                 RELAY.frames_dropped),
                ("messages_sent_direct", "Messages to agents and viewers written as they "
                                         "were queued, without waking the socket's writer",
                 RELAY.messages_direct),
                ("heartbeats_answered_inline", "Heartbeats answered as they were read, "
                                               "without waking the socket's reader",
                 RELAY.heartbeats_inline),
                ("status_reports_taken_inline", "Status reports with nothing new taken as "
                                                "they were read, without waking the "
                                                "socket's reader",
                 RELAY.reports_inline)):
            yield CounterMetricFamily(f"remote_support_{name}", doc, value=value)
        auth = CounterMetricFamily("remote_support_auth_failures",
                                   "Refused credentials, by method", labels=["method"])
        for method in AUTH_METHODS:
            auth.add_metric([method], AUTH_FAILURES[method])
        yield auth
        limited = CounterMetricFamily("remote_support_rate_limited",
                                      "Requests refused by a rate limit or lockout, by limit",
                                      labels=["limit"])
        for limit, count in sorted(RATE_LIMITED.items()):
            limited.add_metric([limit], count)
        yield limited
        yield InfoMetricFamily("remote_support_build", "The server's version",
                               value={"version": __version__,
                                      "python": platform.python_version(),
                                      "node": self._owner.node})


class Metrics:
    """One server's metrics: its registry, the store timer and the loop-lag monitor."""

    def __init__(self, live: Callable[[], Iterable[Any]], node: str = "", *,
                 waiting: Callable[[], int] = lambda: 0) -> None:
        self.node = node
        """The cluster node's id, shown in ``remote_support_build_info`` (empty: no cluster)."""
        self.registry = CollectorRegistry()
        self.registry.register(_Live(live, waiting, self))
        self.store_seconds = Histogram(
            "remote_support_store_seconds", "Time spent in calls to the database store",
            ["operation"], registry=self.registry, buckets=_STORE_BUCKETS)
        self.loop_lag = Gauge(
            "remote_support_event_loop_lag_seconds",
            f"How late the event loop ran a timer due every {LAG_INTERVAL:g} s (the latest)",
            registry=self.registry)

    async def watch_loop(self, interval: float = LAG_INTERVAL) -> None:
        """Measure how late the loop wakes a sleeper: a busy or blocked loop delays
        every socket the process serves by as much."""
        while True:
            start = time.monotonic()
            await anyio.sleep(interval)
            self.loop_lag.set(max(0.0, time.monotonic() - start - interval))


class TimedStore:
    """A store whose every coroutine method is timed into ``remote_support_store_seconds``
    (labelled by the method's name: the Store protocol's, a fixed set)."""

    def __init__(self, store: Store, histogram: Histogram) -> None:
        self._store = store
        self._histogram = histogram
        self._wrapped: dict[str, Any] = {}

    @classmethod
    def wrap(cls, store: Store, metrics: Metrics) -> Store:
        """``store`` as the server uses it, timed."""
        return cast(Store, cls(store, metrics.store_seconds))

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._store, name)
        if name.startswith("_") or not inspect.iscoroutinefunction(attribute):
            return attribute
        found = self._wrapped.get(name)
        if found is None:
            found = self._wrapped[name] = self._timed(name, attribute)
        return found

    def _timed(self, name: str, method: Callable[..., Awaitable[Any]]) -> Any:
        observe = self._histogram.labels(name).observe

        @functools.wraps(method)
        async def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await method(*args, **kwargs)
            finally:
                observe(time.perf_counter() - start)

        return timed

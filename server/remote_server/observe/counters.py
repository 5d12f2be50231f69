"""Plain counters the relay and the web edge bump as things happen, read at scrape time.

Counting a video frame must cost no more than an attribute increment: the relay
forwards thousands a second, and a metrics library call per frame would show in
``bench/relay.py``. These are process-wide, like the process itself; the
collector in :mod:`.metrics` exposes them as Prometheus counters.
"""

from __future__ import annotations

from collections import Counter

__all__ = ["AUTH_FAILURES", "AUTH_METHODS", "RATE_LIMITED", "RELAY", "RelayCounts",
           "auth_failed", "rate_limited"]


class RelayCounts:
    """Video through the relay, and what of it and of heartbeats and status reports was
    taken inline, since the process started."""

    __slots__ = ("bytes_in", "bytes_out", "frames_dropped", "frames_in", "frames_inline",
                 "frames_out", "heartbeats_inline", "messages_direct", "reports_inline")

    def __init__(self) -> None:
        self.frames_in = 0  # video frames received from agents
        self.frames_inline = 0  # of those, relayed as read, the socket's reader not woken
        self.bytes_in = 0
        self.frames_out = 0  # video frames handed to a viewer's socket
        self.bytes_out = 0
        self.frames_dropped = 0  # frames a viewer's outbox dropped (slow, or wrong codec)
        self.heartbeats_inline = 0  # answered as read, the socket's reader not woken
        self.reports_inline = 0  # status reports with nothing new, taken as read
        self.messages_direct = 0  # messages written as queued, the socket's writer not woken


RELAY = RelayCounts()

AUTH_METHODS = ("password", "login_token", "viewer_token", "agent_credential", "support_code",
                "metrics_token", "oidc")
"""The ``method`` label of ``remote_support_auth_failures_total``: a fixed set."""

AUTH_FAILURES: Counter[str] = Counter()
RATE_LIMITED: Counter[str] = Counter()
"""Requests refused by a rate limit or lockout, by the limit's name (a fixed set)."""


def auth_failed(method: str) -> None:
    """Count one refused credential; ``method`` is one of :data:`AUTH_METHODS`."""
    AUTH_FAILURES[method] += 1


def rate_limited(limit: str, wait: float | None) -> float | None:
    """Count a refusal of the limit named ``limit`` when ``wait`` says it refused; pass
    ``wait`` through, so a check reads ``return rate_limited(name, await check())``."""
    if wait is not None:
        RATE_LIMITED[limit] += 1
    return wait

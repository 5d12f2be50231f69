"""Which audit events become webhook events, under which name, and with what payload.

Most map one to one; ``auth.login_failures`` is derived: it fires when failed logins
(users' and agents') reach a threshold within a window, once per crossing.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Any

from remote_core.records import AuditEvent, utcnow

__all__ = ["EVENTS", "FAILED_LOGINS", "EventMapper", "payload"]

LOGIN_FAILURES = "auth.login_failures"
FAILED_LOGINS = frozenset({"auth.login_failed", "agent.auth_failed"})
"""Audit kinds counted towards ``auth.login_failures``."""

_RENAMED = {
    "session.opened": "session.opened",
    "session.closed": "session.closed",
    "session.consent_granted": "session.consent_granted",
    "session.consent_denied": "session.consent_denied",
    "session.consent_timeout": "session.consent_denied",  # nobody answered: denied
    "agent.update_status": "agent.update_result",  # only a final state, see below
    "agent_key.revoked": "agent_key.revoked",
    "auth.account_guarded": "auth.account_guarded",
    "support_code.lockout": "support_code.lockout",
    "backstage.opened": "backstage.opened",  # a shell on a machine: worth a receiver's eye
    "backstage.closed": "backstage.closed",
    "file.uploaded": "file.transferred",  # who moved which file, either way (its direction,
    "file.downloaded": "file.transferred",  # path, size and SHA-256 in the detail)
}
_FINAL_UPDATE_STATES = frozenset({"UPDATE_COMPLETE", "UPDATE_FAILED"})

EVENTS = frozenset({*_RENAMED.values(), LOGIN_FAILURES})
"""Every webhook event name a target may ask for (all, by default)."""


def payload(event: str, audit: AuditEvent, delivery_id: str,
            detail: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON body of one webhook request."""
    moment = audit.created_at or utcnow()
    return {
        "id": delivery_id,
        "event": event,
        "occurred_at": moment.isoformat().replace("+00:00", "Z"),
        "session_id": audit.session_id,
        "agent_id": audit.agent_id,
        "actor": audit.actor,
        "target": audit.target,
        "client_ip": audit.client_ip,
        "detail": dict(audit.detail) if detail is None else detail,
    }


class EventMapper:
    """Turns audit events into ``(webhook event, detail)`` pairs; keeps the failed-login
    count. Called on the event loop only."""

    def __init__(self, threshold: int, window: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._threshold = threshold
        self._window = window
        self._clock = clock
        self._failures: deque[float] = deque()

    def map(self, audit: AuditEvent) -> list[tuple[str, dict[str, Any]]]:
        if audit.kind in FAILED_LOGINS:
            return self._count_failure()
        name = _RENAMED.get(audit.kind)
        if name is None:
            return []
        detail = dict(audit.detail)
        if audit.kind == "agent.update_status" and detail.get("state") not in \
                _FINAL_UPDATE_STATES:
            return []  # progress reports are not results
        if audit.kind == "session.consent_timeout":
            detail.setdefault("reason", "timeout")
        return [(name, detail)]

    def _count_failure(self) -> list[tuple[str, dict[str, Any]]]:
        now = self._clock()
        self._failures.append(now)
        while self._failures and self._failures[0] <= now - self._window:
            self._failures.popleft()
        if len(self._failures) < self._threshold:
            return []
        count = len(self._failures)
        self._failures.clear()  # the next event needs as many failures again
        return [(LOGIN_FAILURES, {"failures": count, "window_seconds": self._window})]

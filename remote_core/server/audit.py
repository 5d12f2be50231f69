"""The audit log: every event goes to the store and to the ``audit_event`` hook."""

from __future__ import annotations

import dataclasses
import logging

from ..interfaces import Store
from ..plugins import Plugins
from ..records import Event, utcnow

__all__ = ["Audit"]

log = logging.getLogger(__name__)


class Audit:
    """Writes audit events; a failing write is logged, never raised into the caller's path."""

    def __init__(self, store: Store, plugins: Plugins) -> None:
        self._store = store
        self._plugins = plugins

    async def record(self, event: Event) -> None:
        if event.created_at is None:
            event = dataclasses.replace(event, created_at=utcnow())
        try:
            await self._store.add_event(event)
        except Exception:
            log.exception("could not write audit event %s", event.kind)
        self._plugins.audit_event(event)

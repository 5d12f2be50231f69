"""The audit log: every event goes to the store, to the ``audit_event`` hook and to the
plugins' services (webhook delivery ...)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence

from remote_core.interfaces import Service, Store
from remote_core.plugins import Plugins
from remote_core.records import DEFAULT_TENANT_ID, AuditEvent, tenant_of, utcnow

from .writes import WriteQueue

__all__ = ["Audit"]

log = logging.getLogger(__name__)

AUDIT_KEY = "audit"
"""One key for every event, so the log keeps its order through an outage."""


class Audit:
    """Writes audit events; a failing write is retried by the write queue (the database is
    away) or logged, never raised into the caller's path.

    An event recorded without a tenant is its machine's tenant's (looked up as it is
    written), else the default tenant's: relay events name their machine."""

    def __init__(self, store: Store, plugins: Plugins, writes: WriteQueue | None = None,
                 services: Sequence[Service] = ()) -> None:
        self._store = store
        self._plugins = plugins
        self._services = tuple(services)
        self.writes = writes or WriteQueue()

    async def record(self, event: AuditEvent) -> None:
        if event.created_at is None:
            event = dataclasses.replace(event, created_at=utcnow())

        async def write() -> None:
            await self._store.add_event(await self._with_tenant(event))

        await self.writes.submit(AUDIT_KEY, f"audit event {event.kind}", write)
        self._announce(event)

    async def record_many(self, events: Sequence[AuditEvent]) -> None:
        """Record events together, in order, in one write (a server shutting down: one
        statement, not one per session)."""
        now = utcnow()
        events = [e if e.created_at is not None else dataclasses.replace(e, created_at=now)
                  for e in events]
        if not events:
            return

        async def write() -> None:
            await self._store.add_events([await self._with_tenant(e) for e in events])

        await self.writes.submit(AUDIT_KEY, f"{len(events)} audit events", write)
        for event in events:
            self._announce(event)

    async def _with_tenant(self, event: AuditEvent) -> AuditEvent:
        return dataclasses.replace(event, tenant_id=event.tenant_id or await self._tenant(event))

    def _announce(self, event: AuditEvent) -> None:
        self._plugins.audit_event(event)
        for service in self._services:
            try:
                service.audit_event(event)
            except Exception:
                log.exception("a plugin service failed to take audit event %s", event.kind)

    async def _tenant(self, event: AuditEvent) -> str:
        if event.agent_id is None:
            return DEFAULT_TENANT_ID
        machine = await self._store.get_machine_by_id(event.agent_id)
        return tenant_of(machine.tenant_id) if machine is not None else DEFAULT_TENANT_ID

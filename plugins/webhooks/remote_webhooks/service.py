"""Delivery: off the request path, through a bounded queue, retried with backoff.

The audit log hands each event over without waiting (a full queue drops it, with a
warning); a few workers POST each job to its target, retrying a 5xx, 408, 429, a
timeout or a connection error with exponential backoff and jitter, and log every
attempt in the store's delivery log.
"""

from __future__ import annotations

import json
import logging
import random
import ssl
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta

import anyio
import httpcore
from anyio.streams.memory import MemoryObjectReceiveStream

from remote_core.errors import ConfigError, StoreError
from remote_core.interfaces import Service, Store
from remote_core.records import AuditEvent, WebhookDelivery, utcnow

from .config import Target, WebhookConfig
from .events import EventMapper, payload
from .guard import AddressPolicy, GuardedBackend, TargetRefused
from .signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign

__all__ = ["Job", "WebhookService", "backoff_delay"]

log = logging.getLogger(__name__)

USER_AGENT = "remote-support-webhooks/0.1"
RETRY_STATUSES = frozenset({408, 425, 429})
PRUNE_EVERY = 3600.0


@dataclass(frozen=True)
class Job:
    """One event for one target, with the id every attempt carries."""

    target: Target
    event: str
    delivery_id: str
    body: bytes


def backoff_delay(attempt: int, base: float, ceiling: float,
                  rand: random.Random | None = None) -> float:
    """Seconds to wait after failed attempt ``attempt`` (1-based): ``base`` doubled each
    time, at most ``ceiling``, less a random part of up to half, so receivers coming
    back are not hit by every sender at once."""
    full = min(ceiling, base * (1 << min(attempt - 1, 62)))
    jitter: float = (rand or random).random()  # spreads retries; guards no secret
    return full * (0.5 + 0.5 * jitter)


class WebhookService(Service):
    """The plugin's service: idle without targets."""

    def __init__(self, config: WebhookConfig) -> None:
        self.config = config
        self._mapper = EventMapper(config.login_failure_threshold, config.login_failure_window)
        self._send, self._receive = anyio.create_memory_object_stream[Job](config.queue_size)
        try:
            self._ssl = ssl.create_default_context(cafile=config.ca_bundle)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"webhooks option 'ca_bundle': cannot load {config.ca_bundle}: "
                              f"{exc}") from None

    # -- the audit log's side: never waits -------------------------------------------------
    def audit_event(self, event: AuditEvent) -> None:
        if not self.config.targets:
            return
        for name, detail in self._mapper.map(event):
            for target in self.config.targets:
                if name not in target.events:
                    continue
                delivery_id = str(uuid.uuid4())
                body = json.dumps(payload(name, event, delivery_id, detail),
                                  separators=(",", ":"), sort_keys=True, default=str).encode()
                try:
                    self._send.send_nowait(Job(target, name, delivery_id, body))
                except anyio.WouldBlock:
                    log.warning("webhook queue full (%d): %s for target %s dropped",
                                self.config.queue_size, name, target.name)

    # -- the workers -----------------------------------------------------------------------
    async def run(self, store: Store) -> None:
        if not self.config.targets:
            return
        log.info("webhooks: %d target(s): %s", len(self.config.targets),
                 ", ".join(f"{t.name} {t.shown_url}" for t in self.config.targets))
        backend = GuardedBackend(AddressPolicy(self.config.allow_addresses))
        async with httpcore.AsyncConnectionPool(ssl_context=self._ssl, network_backend=backend,
                                                max_connections=self.config.concurrency,
                                                retries=0) as pool:
            async with anyio.create_task_group() as group:
                group.start_soon(self._prune, store)
                for _ in range(self.config.concurrency):
                    group.start_soon(self._work, self._receive.clone(), pool, store)

    async def _work(self, jobs: MemoryObjectReceiveStream[Job], pool: httpcore.AsyncConnectionPool,
                    store: Store) -> None:
        async with jobs:
            async for job in jobs:
                try:
                    await self._deliver(job, pool, store)
                except Exception:
                    log.exception("webhook %s to %s failed unexpectedly", job.event,
                                  job.target.name)

    async def _deliver(self, job: Job, pool: httpcore.AsyncConnectionPool, store: Store) -> None:
        for attempt in range(1, self.config.max_attempts + 1):
            status, error, retry = await self._attempt(job, pool)
            if status is not None and 200 <= status < 300:
                outcome = "delivered"
            elif error.startswith("refused:"):
                outcome = "refused"
            elif retry and attempt < self.config.max_attempts:
                outcome = "retrying"
            else:
                outcome = "failed"
            await self._log(store, WebhookDelivery(
                delivery_id=job.delivery_id, target=job.target.name, url=job.target.shown_url,
                event=job.event, attempt=attempt, outcome=outcome, status_code=status,
                error=error))
            if outcome != "retrying":
                if outcome != "delivered":
                    log.warning("webhook %s to %s %s: %s", job.event, job.target.name,
                                outcome, error)
                return
            await anyio.sleep(backoff_delay(attempt, self.config.backoff,
                                            self.config.backoff_max))

    async def _attempt(self, job: Job, pool: httpcore.AsyncConnectionPool
                       ) -> tuple[int | None, str, bool]:
        """(status, error, whether a retry may help) of one POST."""
        timestamp = str(int(time.time()))
        headers = [
            (b"Content-Type", b"application/json"),
            (b"User-Agent", USER_AGENT.encode()),
            (b"X-Remote-Support-Event", job.event.encode()),
            (b"X-Remote-Support-Delivery", job.delivery_id.encode()),
            (TIMESTAMP_HEADER.encode(), timestamp.encode()),
            (SIGNATURE_HEADER.encode(), sign(job.target.secret, timestamp, job.body).encode()),
        ]
        limit = self.config.timeout
        timeouts = {"connect": limit, "read": limit, "write": limit, "pool": limit}
        try:
            with anyio.fail_after(limit * 2):  # a receiver trickling bytes still ends
                async with pool.stream("POST", job.target.url, headers=headers,
                                       content=job.body,
                                       extensions={"timeout": timeouts}) as response:
                    status = response.status  # the body is not read: nothing we need
        except TargetRefused as exc:
            return None, f"refused: {exc}", False
        except (TimeoutError, httpcore.TimeoutException):
            return None, f"timed out after {limit:g} s", True
        except (httpcore.NetworkError, httpcore.ProtocolError, OSError) as exc:
            return None, f"{type(exc).__name__}: {exc}"[:500], True
        if 200 <= status < 300:
            return status, "", False
        return status, f"HTTP {status}", status >= 500 or status in RETRY_STATUSES

    async def _log(self, store: Store, delivery: WebhookDelivery) -> None:
        try:
            await store.add_webhook_delivery(delivery)
        except StoreError as exc:
            log.warning("webhook delivery log not written (%s): %s to %s attempt %d %s",
                        exc, delivery.event, delivery.target, delivery.attempt,
                        delivery.outcome)

    async def _prune(self, store: Store) -> None:
        keep = timedelta(days=self.config.retention_days)
        while True:
            try:
                await store.prune_webhook_deliveries(utcnow() - keep)
            except StoreError as exc:
                log.warning("webhook delivery log not pruned: %s", exc)
            await anyio.sleep(PRUNE_EVERY)

    def __repr__(self) -> str:
        return f"WebhookService(targets={[t.name for t in self.config.targets]})"

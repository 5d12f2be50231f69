"""The webhook delivery log, for administrators: each attempt, newest first."""

from __future__ import annotations

from remote_core.records import Keyset, WebhookDelivery

from . import schemas as s
from .endpoint import Call, Endpoint
from .paging import Cursors, Paged, collect
from .views import created

__all__ = ["ENDPOINTS"]

CURSORS = Cursors("webhook_deliveries", int)


def delivery_out(d: WebhookDelivery) -> s.WebhookDeliveryOut:
    assert d.id is not None, "a stored delivery has an id"
    return s.WebhookDeliveryOut(
        id=d.id, delivery_id=d.delivery_id, target=d.target, url=d.url, event=d.event,
        attempt=d.attempt, outcome=s.DeliveryOutcome(d.outcome), status_code=d.status_code,
        error=d.error, created_at=created(d.created_at))


async def list_deliveries(call: Call) -> Paged[s.WebhookDeliveryOut]:
    q: s.WebhookDeliveryQuery = call.query

    async def fetch(after: Keyset | None, limit: int) -> list[WebhookDelivery]:
        return await call.ctx.store.list_webhook_deliveries(limit, after=after,
                                                            failed_only=q.failed)

    page = await collect(fetch, lambda d: Keyset(created(d.created_at), d.id or 0), CURSORS, q)
    return Paged([delivery_out(d) for d in page.items], page.cursor)


ENDPOINTS = [
    Endpoint("GET", "/api/webhooks/deliveries", list_deliveries,
             "The webhook delivery log, newest first: one item per attempt to deliver an "
             "event to a target (the webhooks plugin; the whole server's)", access="global",
             query=s.WebhookDeliveryQuery, result=list[s.WebhookDeliveryOut], tag="webhooks"),
]

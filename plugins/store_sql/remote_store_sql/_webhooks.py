"""The webhook delivery log: one row per attempt."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from remote_core.records import Keyset, WebhookDelivery

from ._schema import webhook_deliveries
from ._sql import keyset_page

__all__ = ["add_webhook_delivery", "list_webhook_deliveries", "prune_webhook_deliveries"]

NOT_DELIVERED = ("retrying", "failed", "refused")


def _from_row(row: Any) -> WebhookDelivery:
    m = row._mapping
    return WebhookDelivery(
        delivery_id=m["delivery_id"], target=m["target"], url=m["url"], event=m["event"],
        attempt=m["attempt"], outcome=m["outcome"], status_code=m["status_code"],
        error=m["error"] or "", created_at=m["created_at"], id=m["id"])


def add_webhook_delivery(conn: Connection, delivery: WebhookDelivery, now: datetime) -> None:
    conn.execute(sa.insert(webhook_deliveries).values(
        delivery_id=delivery.delivery_id, target=delivery.target, url=delivery.url,
        event=delivery.event, attempt=delivery.attempt, outcome=delivery.outcome,
        status_code=delivery.status_code, error=delivery.error,
        created_at=delivery.created_at or now))


def list_webhook_deliveries(conn: Connection, limit: int, after: Keyset | None,
                            failed_only: bool) -> list[WebhookDelivery]:
    query = sa.select(webhook_deliveries)
    if failed_only:
        query = query.where(webhook_deliveries.c.outcome.in_(NOT_DELIVERED))
    query = keyset_page(query, webhook_deliveries.c.created_at, webhook_deliveries.c.id,
                        after=after, limit=limit, newest_first=True)
    return [_from_row(row) for row in conn.execute(query)]


def prune_webhook_deliveries(conn: Connection, before: datetime) -> int:
    result = conn.execute(sa.delete(webhook_deliveries)
                          .where(webhook_deliveries.c.created_at < before))
    return int(result.rowcount or 0)

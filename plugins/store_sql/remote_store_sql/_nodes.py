"""Cluster nodes' beats: alive, and whether they reach the bus."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ._schema import cluster_nodes
from ._sql import insert


def beat_node(conn: Connection, node_id: str, on_bus: bool, at: datetime) -> None:
    stmt = insert(conn, cluster_nodes).values(node_id=node_id, on_bus=on_bus, seen_at=at)
    conn.execute(stmt.on_conflict_do_update(
        index_elements=[cluster_nodes.c.node_id],
        set_={"on_bus": stmt.excluded.on_bus, "seen_at": stmt.excluded.seen_at}))


def nodes_on_bus(conn: Connection, since: datetime) -> set[str]:
    return set(conn.execute(sa.select(cluster_nodes.c.node_id).where(
        cluster_nodes.c.on_bus.is_(True), cluster_nodes.c.seen_at >= since)).scalars())


def forget_node(conn: Connection, node_id: str) -> None:
    conn.execute(sa.delete(cluster_nodes).where(cluster_nodes.c.node_id == node_id))

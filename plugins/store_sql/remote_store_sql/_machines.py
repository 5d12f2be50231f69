"""Machines and their agent keys (SPEC 2.4, 3.3, 5.2, 5.4), as functions of a connection."""

from __future__ import annotations

import functools
import re
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection

from remote_core.errors import NotFoundError
from remote_core.records import (
    DEFAULT_TENANT_ID,
    AgentKey,
    Keyset,
    Machine,
    MachineFilter,
    MachineReport,
    RestoreResult,
    tenant_of,
)

from ._schema import agent_keys, machines
from ._sql import dialect_insert, in_tenant, keyset_page, values_given

_KEY_HASH = re.compile(r"^[0-9a-f]{64}$")
_LIVE = machines.c.deleted_at.is_(None)


def machine_from_row(row: Any) -> Machine:
    """A record from a row; NULL in any nullable column reads as the record's default."""
    m = row._mapping
    return Machine(
        agent_id=m["agent_id"],
        machine_uid=m["machine_uid"] or None,
        hostname=m["hostname"] or "",
        os_version=m["os_version"] or "",
        organization=m["organization"] or "",
        site=m["site"] or "",
        tags=tuple(m["tags"] or ()),
        is_elevated=bool(m["is_elevated"]),
        is_persistent=bool(m["is_persistent"]),
        status=m["status"] or "offline",
        agent_version=m["agent_version"] or "",
        plugins=tuple(m["plugins"] or ()),
        last_seen=m["last_seen"],
        created_at=m["created_at"],
        updated_at=m["updated_at"],
        deleted_at=m["deleted_at"],
        tenant_id=m["tenant_id"] or DEFAULT_TENANT_ID,
    )


def _report_values(report: MachineReport) -> dict[str, Any]:
    values = values_given(
        hostname=report.hostname, os_version=report.os_version,
        organization=report.organization, site=report.site, is_elevated=report.is_elevated,
        is_persistent=report.is_persistent, status=report.status,
        agent_version=report.agent_version,
    )
    if report.tags is not None:
        values["tags"] = list(report.tags)
    if report.plugins is not None:
        values["plugins"] = list(report.plugins)
    return values


_PLACEMENT = ("organization", "site", "tags")


def _unassigned_only(conn: Connection, report: MachineReport,
                     values: dict[str, Any]) -> dict[str, Any]:
    """Placement is the operator's: a report fills organization, site and tags only where
    the stored machine has none, so an agent cannot move itself into another list.

    The stored machine is the row the upsert will update: the uid's, else (a uid new to
    the store moves onto it) the agent_id's."""
    if not any(name in values for name in _PLACEMENT):
        return values
    placement = sa.select(*(machines.c[n] for n in _PLACEMENT))
    row = None
    if report.machine_uid:
        row = conn.execute(placement.where(machines.c.machine_uid == report.machine_uid)).first()
    if row is None:
        row = conn.execute(placement.where(machines.c.agent_id == report.agent_id)).first()
    if row is None:
        return values
    return {k: v for k, v in values.items() if k not in _PLACEMENT or not row._mapping[k]}


def upsert_machine(conn: Connection, report: MachineReport, now: datetime) -> Machine:
    """Insert or update; the conflict target is ``machine_uid`` when given, else ``agent_id``.

    Either way the row is revived (``deleted_at`` cleared): the machine really connected.
    Reported placement only fills what the operator left empty (:func:`_unassigned_only`).
    """
    changes = {**_unassigned_only(conn, report, _report_values(report)), "updated_at": now,
               "last_seen": now, "deleted_at": None}
    new_row = {"tags": [], "status": "offline", "created_at": now,
               "tenant_id": tenant_of(report.tenant_id), **changes,
               "agent_id": report.agent_id, "machine_uid": report.machine_uid}
    target = "machine_uid" if report.machine_uid else "agent_id"
    stmt = _upsert(conn.dialect.name, target, tuple(changes))
    if not report.machine_uid:
        return machine_from_row(conn.execute(stmt, new_row).one())
    try:
        with conn.begin_nested():
            return machine_from_row(conn.execute(stmt, new_row).one())
    except sa.exc.IntegrityError:
        pass
    # The agent_id is registered under another (or no) uid: it now reports this one.
    row = conn.execute(
        sa.update(machines).where(machines.c.agent_id == report.agent_id)
        .values(**changes, machine_uid=report.machine_uid).returning(*machines.c)
    ).one()
    return machine_from_row(row)


@functools.cache
def _upsert(dialect: str, target: str, changed: tuple[str, ...]) -> Any:
    """The upsert of a machine row changing ``changed`` on a conflict on ``target``, its
    values bound when executed. Built once per shape: building it took about as long as
    running it (an admission storm upserts every machine twice)."""
    stmt = dialect_insert(dialect, machines)
    return stmt.on_conflict_do_update(
        index_elements=[machines.c[target]],
        set_={name: stmt.excluded[name] for name in changed},  # the same values as inserted
    ).returning(*machines.c)


def create_machine(conn: Connection, agent_id: str, organization: str, site: str,
                   tags: Sequence[str], now: datetime, tenant_id: str) -> Machine:
    row = conn.execute(sa.insert(machines).values(
        agent_id=agent_id, organization=organization, site=site, tags=list(tags),
        status="offline", created_at=now, updated_at=now, tenant_id=tenant_id,
    ).returning(*machines.c)).one()
    return machine_from_row(row)


def get_machine(conn: Connection, agent_id: str, *, include_deleted: bool = False
                ) -> Machine | None:
    query = sa.select(machines).where(machines.c.agent_id == agent_id)
    if not include_deleted:
        query = query.where(_LIVE)
    row = conn.execute(query).first()
    return machine_from_row(row) if row else None


def get_machine_by_uid(conn: Connection, machine_uid: str) -> Machine | None:
    row = conn.execute(
        sa.select(machines).where(machines.c.machine_uid == machine_uid, _LIVE)).first()
    return machine_from_row(row) if row else None


def _has_tag(conn: Connection, tag: str) -> sa.ColumnElement[bool]:
    if conn.dialect.name == "postgresql":
        tags = sa.type_coerce(machines.c.tags, postgresql.ARRAY(sa.Text()))
        return tags.contains(sa.cast([tag], postgresql.ARRAY(sa.Text())))
    each = sa.func.json_each(machines.c.tags).table_valued("value")
    return sa.exists().select_from(each).where(each.c.value == tag)


def _contains_text(text: str) -> sa.ColumnElement[bool]:
    needle = text.lower()
    columns = (machines.c.agent_id, machines.c.machine_uid, machines.c.hostname,
               machines.c.organization, machines.c.site)
    return sa.or_(*(sa.func.lower(sa.func.coalesce(c, "")).contains(needle, autoescape=True)
                    for c in columns))


def list_machines(conn: Connection, where: MachineFilter) -> list[Machine]:
    query = sa.select(machines).where(_LIVE)
    if where.tenant_id is not None:
        query = query.where(in_tenant(machines.c.tenant_id, where.tenant_id))
    text_equal = {"organization": where.organization, "site": where.site}
    for name, value in text_equal.items():
        if value is not None:
            query = query.where(sa.func.coalesce(machines.c[name], "") == value)
    if where.status is not None:
        query = query.where(sa.func.coalesce(machines.c.status, "offline") == where.status)
    if where.tag is not None:
        query = query.where(_has_tag(conn, where.tag))
    if where.text:
        query = query.where(_contains_text(where.text))
    if where.organizations is not None and "*" not in where.organizations:
        query = query.where(
            sa.func.coalesce(machines.c.organization, "").in_(list(where.organizations)))
    query = keyset_page(query, machines.c.created_at, machines.c.agent_id, after=where.after,
                        limit=where.limit, newest_first=False)
    return [machine_from_row(row) for row in conn.execute(query)]


def update_machine(conn: Connection, agent_id: str, changes: dict[str, Any],
                   now: datetime) -> Machine | None:
    row = conn.execute(
        sa.update(machines).where(machines.c.agent_id == agent_id, _LIVE)
        .values(**changes, updated_at=now).returning(*machines.c)
    ).first()
    return machine_from_row(row) if row else None


def set_machine_status(conn: Connection, agent_id: str, status: str,
                       last_seen: datetime | None) -> None:
    conn.execute(sa.update(machines).where(machines.c.agent_id == agent_id)
                 .values(values_given(status=status, last_seen=last_seen)))


def set_machines_offline(conn: Connection, agent_ids: tuple[str, ...],
                         last_seen: datetime) -> None:
    """One statement, executed for many rows (executemany)."""
    if agent_ids:
        conn.execute(sa.update(machines).where(machines.c.agent_id == sa.bindparam("agent"))
                     .values(status="offline", last_seen=last_seen),
                     [{"agent": agent_id} for agent_id in agent_ids])


def set_machines_seen(conn: Connection, seen: dict[str, datetime]) -> None:
    """One statement, executed for many rows (executemany)."""
    conn.execute(sa.update(machines).where(machines.c.agent_id == sa.bindparam("agent"))
                 .values(last_seen=sa.bindparam("seen")),
                 [{"agent": agent_id, "seen": at} for agent_id, at in seen.items()])


def set_all_machines_offline(conn: Connection, keep: tuple[str, ...] = ()) -> int:
    query = sa.update(machines).where(machines.c.status != "offline")
    if keep:
        query = query.where(machines.c.agent_id.not_in(keep))
    return conn.execute(query.values(status="offline")).rowcount


def soft_delete_machine(conn: Connection, agent_id: str, now: datetime) -> bool:
    result = conn.execute(sa.update(machines).where(machines.c.agent_id == agent_id, _LIVE)
                          .values(deleted_at=now, status="offline"))
    if result.rowcount != 1:
        return False
    # A machine purged as compromised must not come back with the key it had.
    conn.execute(sa.update(agent_keys).where(agent_keys.c.agent_id == agent_id,
                                             agent_keys.c.revoked_at.is_(None))
                 .values(revoked_at=now))
    return True


def hard_delete_machine(conn: Connection, agent_id: str) -> bool:
    conn.execute(sa.delete(agent_keys).where(agent_keys.c.agent_id == agent_id))
    result = conn.execute(sa.delete(machines).where(machines.c.agent_id == agent_id))
    return result.rowcount == 1


def restore_machines(conn: Connection) -> RestoreResult:
    """Every live machine, and the keyed ones (any key ever issued, revoked included:
    a machine that was keyed stays authoritative and is never matched by uid).

    No error is caught here: if the keyed query fails, restore fails (closed).
    """
    live = tuple(machine_from_row(row) for row in
                 conn.execute(sa.select(machines).where(_LIVE).order_by(machines.c.agent_id)))
    keyed = conn.execute(sa.select(agent_keys.c.agent_id).distinct()).scalars()
    return RestoreResult(machines=live, keyed_agent_ids=frozenset(keyed))


# -- agent keys -------------------------------------------------------------------


def key_from_row(row: Any) -> AgentKey:
    m = row._mapping
    return AgentKey(
        id=m["id"], agent_id=m["agent_id"], key_hash=m["key_hash"], label=m["label"] or "",
        created_at=m["created_at"], last_used_at=m["last_used_at"],
        revoked_at=m["revoked_at"], tenant_id=m["tenant_id"] or DEFAULT_TENANT_ID,
    )


def add_agent_key(conn: Connection, agent_id: str, key_hash: str, label: str,
                  now: datetime) -> AgentKey:
    if not _KEY_HASH.match(key_hash):
        raise ValueError("key_hash must be the lower-case SHA-256 hex digest of the key, "
                         "never the key itself")
    if get_machine(conn, agent_id) is None:
        raise NotFoundError(f"no machine {agent_id!r} to issue a key for")
    row = conn.execute(sa.insert(agent_keys).values(
        id=str(uuid.uuid4()), agent_id=agent_id, key_hash=key_hash, label=label,
        created_at=now, tenant_id=DEFAULT_TENANT_ID,
    ).returning(*agent_keys.c)).one()
    return key_from_row(row)


def find_agent_key(conn: Connection, key_hash: str) -> AgentKey | None:
    row = conn.execute(sa.select(agent_keys).where(
        agent_keys.c.key_hash == key_hash, agent_keys.c.revoked_at.is_(None))).first()
    return key_from_row(row) if row else None


def list_agent_keys(conn: Connection, agent_id: str, after: Keyset | None,
                    limit: int | None) -> list[AgentKey]:
    query = keyset_page(sa.select(agent_keys).where(agent_keys.c.agent_id == agent_id),
                        agent_keys.c.created_at, agent_keys.c.id, after=after, limit=limit,
                        newest_first=False)
    return [key_from_row(row) for row in conn.execute(query)]


def revoke_agent_key(conn: Connection, agent_id: str, key_id: str,
                     now: datetime) -> AgentKey | None:
    mine = (agent_keys.c.id == key_id, agent_keys.c.agent_id == agent_id)
    conn.execute(sa.update(agent_keys).where(*mine, agent_keys.c.revoked_at.is_(None))
                 .values(revoked_at=now))
    row = conn.execute(sa.select(agent_keys).where(*mine)).first()
    return key_from_row(row) if row else None


def touch_agent_key(conn: Connection, key_id: str, now: datetime) -> None:
    conn.execute(sa.update(agent_keys).where(agent_keys.c.id == key_id)
                 .values(last_used_at=now))

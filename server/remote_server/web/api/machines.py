"""Machines: list, read, pre-register, edit, history and removal (SPEC 3.3, 4; CONTRACT 2)."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from remote_core.protocol import pb
from remote_core.records import AuditEvent, Keyset, Machine, MachineFilter, tenant_of

from ...recordings import purge_recordings
from ..problem import Problem
from . import schemas as s
from .endpoint import Call, Endpoint
from .history import EXPORT_LIMIT, history_page
from .paging import Cursors, Paged, collect
from .views import (
    can_see,
    created,
    machine_out,
    path_id,
    visible_organizations,
)

__all__ = ["ENDPOINTS", "find_machine"]

CURSORS = Cursors("machines")


async def find_machine(call: Call) -> Machine:
    """The live machine of the path, if the caller may see it; else 404 (no existence leak)."""
    agent_id = path_id(call.param("agent_id"), "machine")
    machine = await call.ctx.store.get_machine(agent_id)
    if machine is None or not can_see(call.me, machine.tenant_id, machine.organization):
        raise Problem(404, "no such machine")
    return machine


async def list_machines(call: Call) -> Paged[dict[str, Any]]:
    """Oldest first; the registry knows who is connected right now (the stored status
    may lag behind), so a status filter is checked against it too."""
    q: s.MachineQuery = call.query
    registry = call.ctx.directory
    where = MachineFilter(organization=q.organization, site=q.site, tag=q.tag,
                          status=q.status, text=q.q,
                          organizations=visible_organizations(call.me), tenant_id=call.tenant)

    async def fetch(after: Keyset | None, limit: int) -> list[Machine]:
        return await call.ctx.store.list_machines(
            dataclasses.replace(where, after=after, limit=limit))

    async def online_as_asked(machine: Machine) -> bool:
        return q.status is None or registry.is_online(machine.agent_id) == (
            q.status is s.MachineStatus.ONLINE)

    page = await collect(fetch, lambda m: Keyset(created(m.created_at), m.agent_id),
                         CURSORS, q, online_as_asked if q.status is not None else None)
    return Paged([machine_out(m, registry) for m in page.items], page.cursor)


async def get_machine(call: Call) -> dict[str, Any]:
    return machine_out(await find_machine(call), call.ctx.directory)


async def create_machine(call: Call) -> dict[str, Any]:
    body: s.MachineCreateIn = call.body
    machine = await call.ctx.store.create_machine(
        str(uuid.uuid4()), body.organization, body.site, tuple(body.tags),
        tenant_id=call.tenant)
    await call.audit(AuditEvent(kind="machine.preregistered", agent_id=machine.agent_id,
                                actor=call.me.username, target=machine.agent_id,
                                client_ip=call.ip, tenant_id=call.tenant))
    return machine_out(machine, call.ctx.directory)


async def patch_machine(call: Call) -> dict[str, Any]:
    body: s.MachinePatchIn = call.body
    machine = await find_machine(call)
    updated = await call.ctx.store.update_machine(
        machine.agent_id, organization=body.organization, site=body.site,
        tags=tuple(body.tags) if body.tags is not None else None)
    if updated is None:
        raise Problem(404, "no such machine")
    return machine_out(updated, call.ctx.directory)


async def history(call: Call) -> Paged[s.HistoryEntryOut]:
    q: s.HistoryQuery = call.query
    return await history_page(call, (await find_machine(call)).agent_id, q)


async def remove_machine(call: Call, agent_id: str, *, purge: bool, uninstall: bool) -> bool:
    """Remove one machine (SPEC 3.3); ``True`` if an uninstall command reached it."""
    registry = call.ctx.directory
    sent = False
    if uninstall and registry.is_online(agent_id):
        command = pb.AdminCommand(command=pb.ADMIN_UNINSTALL, reason="removed by an operator")
        sent = await registry.send_to_agent(agent_id, "admin_command", command)
    if purge:
        await call.ctx.store.soft_delete_machine(agent_id)
    else:
        await call.ctx.store.hard_delete_machine(agent_id)
    await registry.purge_machine(agent_id)
    await purge_recordings(call.ctx.store, call.ctx.recordings, call.ctx.audit,
                           agent_id=agent_id, actor=call.me.username, client_ip=call.ip,
                           reason="its machine was removed")
    await call.audit(AuditEvent(
        kind="machine.purged" if purge else "machine.deleted", agent_id=agent_id,
        actor=call.me.username, target=agent_id, client_ip=call.ip,
        detail={"uninstall_sent": sent}, tenant_id=call.tenant,
    ))
    return sent


async def delete_machine(call: Call) -> s.RemovalOut:
    q: s.MachineDeleteQuery = call.query
    machine = await find_machine(call)
    exported: list[s.HistoryEntryOut] | None = None
    truncated = False
    if q.export:
        exported, truncated = await _export(call, machine.agent_id)
    sent = await remove_machine(call, machine.agent_id, purge=q.purge, uninstall=q.uninstall)
    return s.RemovalOut(agent_id=machine.agent_id,
                        action=s.RemovalAction.PURGED if q.purge else s.RemovalAction.DELETED,
                        uninstall_sent=sent, history=exported, history_truncated=truncated)


async def _export(call: Call, agent_id: str) -> tuple[list[s.HistoryEntryOut], bool]:
    """The newest :data:`EXPORT_LIMIT` entries of a machine's history, and whether there
    were more: a removal exports in one answer, so it is bounded."""
    entries: list[s.HistoryEntryOut] = []
    query = s.HistoryQuery(limit=s.MAX_LIMIT)
    while len(entries) < EXPORT_LIMIT:
        page = await history_page(call, agent_id, query)
        entries += page.items
        if page.cursor is None:
            return entries, False
        query = s.HistoryQuery(limit=s.MAX_LIMIT, cursor=page.cursor)
    return entries[:EXPORT_LIMIT], True


async def bulk_remove(call: Call) -> s.BulkRemovalOut:
    body: s.BulkRemoveIn = call.body
    removed: list[str] = []
    missing: list[str] = []
    for agent_id in dict.fromkeys(body.agent_ids):
        machine = await call.ctx.store.get_machine(agent_id)
        if machine is None or tenant_of(machine.tenant_id) != call.tenant:
            missing.append(agent_id)
            continue
        await remove_machine(call, agent_id, purge=body.purge, uninstall=body.uninstall)
        removed.append(agent_id)
    return s.BulkRemovalOut(removed=removed, not_found=missing)


_ONE = "/api/machines/{agent_id}"
_404 = ((404, "no such machine"),)

ENDPOINTS = [
    Endpoint("GET", "/api/machines", list_machines,
             "List machines (soft-deleted ones excluded), filtered, oldest first",
             query=s.MachineQuery, result=list[s.MachineOut], tag="machines"),
    Endpoint("POST", "/api/machines", create_machine,
             "Pre-register a machine so a key can be issued before install", access="admin",
             body=s.MachineCreateIn, result=s.MachineOut, status=201, tag="machines",
             body_optional=True),
    Endpoint("POST", "/api/machines/bulk-remove", bulk_remove,
             "Remove up to 500 machines; each removal is audited", access="admin",
             body=s.BulkRemoveIn, result=s.BulkRemovalOut, tag="machines"),
    Endpoint("GET", _ONE, get_machine, "Get a machine", result=s.MachineOut,
             tag="machines", responses=_404),
    Endpoint("PATCH", _ONE, patch_machine, "Edit organization, site and tags",
             access="admin", body=s.MachinePatchIn, result=s.MachineOut, tag="machines",
             responses=_404),
    Endpoint("DELETE", _ONE, delete_machine,
             "Remove a machine: uninstall sends ADMIN_UNINSTALL if online, export returns the "
             "history first, purge soft-deletes (else the row is hard-deleted)",
             access="admin", query=s.MachineDeleteQuery, result=s.RemovalOut, tag="machines",
             responses=_404),
    Endpoint("GET", _ONE + "/history", history,
             "A machine's history, newest first: its sessions and its audit events",
             query=s.HistoryQuery, result=list[s.HistoryEntryOut], tag="machines",
             responses=_404),
]

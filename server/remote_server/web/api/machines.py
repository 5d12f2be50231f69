"""Machines: list, read, pre-register, edit, history and removal (SPEC 3.3, 4; CONTRACT 2)."""

from __future__ import annotations

import uuid
from typing import Any

from remote_core.protocol import pb
from remote_core.records import AuditEvent, Machine, MachineFilter

from ..problem import Problem
from . import schemas as s
from .endpoint import Call, Endpoint
from .views import (
    can_see,
    event_out,
    machine_out,
    path_id,
    session_out,
    visible_organizations,
)

__all__ = ["ENDPOINTS", "find_machine"]

HISTORY_LIMIT = 1000


async def find_machine(call: Call) -> Machine:
    """The live machine of the path, if the caller may see it; else 404 (no existence leak)."""
    agent_id = path_id(call.param("agent_id"), "machine")
    machine = await call.ctx.store.get_machine(agent_id)
    if machine is None or not can_see(call.me, machine.organization):
        raise Problem(404, "no such machine")
    return machine


async def list_machines(call: Call) -> list[dict[str, Any]]:
    q: s.MachineQuery = call.query
    machines = await call.ctx.store.list_machines(MachineFilter(
        organization=q.organization, site=q.site, tag=q.tag, status=q.status, text=q.q,
        organizations=visible_organizations(call.me), limit=q.limit, offset=q.offset,
    ))
    registry = call.ctx.directory
    out = [machine_out(m, registry) for m in machines]
    # The registry knows who is connected right now; the stored status may lag behind.
    return [m for m in out if q.status is None or m["status"] == q.status]


async def get_machine(call: Call) -> dict[str, Any]:
    return machine_out(await find_machine(call), call.ctx.directory)


async def create_machine(call: Call) -> dict[str, Any]:
    body: s.MachineCreateIn = call.body
    machine = await call.ctx.store.create_machine(
        str(uuid.uuid4()), body.organization, body.site, tuple(body.tags))
    await call.ctx.audit.record(AuditEvent(kind="machine.preregistered", agent_id=machine.agent_id,
                                           actor=call.me.username, target=machine.agent_id,
                                           client_ip=call.ip))
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


async def _history(call: Call, agent_id: str) -> s.HistoryOut:
    store = call.ctx.store
    sessions = await store.list_sessions(agent_id=agent_id, limit=HISTORY_LIMIT)
    events = await store.list_events(agent_id=agent_id, limit=HISTORY_LIMIT)
    return s.HistoryOut(
        agent_id=agent_id,
        sessions=[session_out(r, call.ctx.directory.session(r.id)) for r in sessions],
        events=[event_out(e) for e in events],
    )


async def history(call: Call) -> s.HistoryOut:
    return await _history(call, (await find_machine(call)).agent_id)


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
    await call.ctx.audit.record(AuditEvent(
        kind="machine.purged" if purge else "machine.deleted", agent_id=agent_id,
        actor=call.me.username, target=agent_id, client_ip=call.ip,
        detail={"uninstall_sent": sent},
    ))
    return sent


async def delete_machine(call: Call) -> s.RemovalOut:
    q: s.MachineDeleteQuery = call.query
    machine = await find_machine(call)
    exported = await _history(call, machine.agent_id) if q.export else None
    sent = await remove_machine(call, machine.agent_id, purge=q.purge, uninstall=q.uninstall)
    return s.RemovalOut(agent_id=machine.agent_id, action="purged" if q.purge else "deleted",
                        uninstall_sent=sent, history=exported)


async def bulk_remove(call: Call) -> s.BulkRemovalOut:
    body: s.BulkRemoveIn = call.body
    removed: list[str] = []
    missing: list[str] = []
    for agent_id in dict.fromkeys(body.agent_ids):
        if await call.ctx.store.get_machine(agent_id) is None:
            missing.append(agent_id)
            continue
        await remove_machine(call, agent_id, purge=body.purge, uninstall=body.uninstall)
        removed.append(agent_id)
    return s.BulkRemovalOut(removed=removed, not_found=missing)


_ONE = "/api/machines/{agent_id}"
_404 = ((404, "no such machine"),)

ENDPOINTS = [
    Endpoint("GET", "/api/machines", list_machines,
             "List machines (soft-deleted ones excluded), filtered", query=s.MachineQuery,
             result=list[s.MachineOut], tag="machines"),
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
    Endpoint("GET", _ONE + "/history", history, "Export the session history of a machine",
             result=s.HistoryOut, tag="machines", responses=_404),
]

"""Tenants: the customers one server keeps apart, managed by global administrators (the
default tenant's). Disabling a tenant ends its users' tokens and its live sessions."""

from __future__ import annotations

import uuid

from remote_core.errors import ConflictError
from remote_core.records import DEFAULT_TENANT_ID, AuditEvent, Tenant, utcnow

from ..problem import Problem
from ..revocation import revoke_tokens
from . import schemas as s
from .endpoint import Call, Endpoint
from .views import path_id, tenant_out

__all__ = ["ENDPOINTS"]


async def _tenant(call: Call) -> Tenant:
    tenant = await call.ctx.store.get_tenant(path_id(call.param("tenant_id"), "tenant"))
    if tenant is None:
        raise Problem(404, "no such tenant")
    return tenant


def _taken(name: str) -> Problem:
    return Problem(409, f"tenant name {name!r} is taken", kind="tenant-name-taken")


async def list_tenants(call: Call) -> list[s.TenantOut]:
    return [tenant_out(t) for t in await call.ctx.store.list_tenants()]


async def create_tenant(call: Call) -> s.TenantOut:
    body: s.TenantCreateIn = call.body
    try:
        tenant = await call.ctx.store.create_tenant(
            Tenant(id=str(uuid.uuid4()), name=body.name, created_at=utcnow()))
    except ConflictError:
        raise _taken(body.name) from None
    await call.audit(AuditEvent(kind="tenant.created", actor=call.me.username,
                                target=tenant.id, client_ip=call.ip,
                                detail={"name": tenant.name}))
    return tenant_out(tenant)


async def get_tenant(call: Call) -> s.TenantOut:
    return tenant_out(await _tenant(call))


async def patch_tenant(call: Call) -> s.TenantOut:
    body: s.TenantPatchIn = call.body
    tenant = await _tenant(call)
    if body.disabled and tenant.id == DEFAULT_TENANT_ID:
        raise Problem(409, "the default tenant holds the global administrators and cannot be "
                           "disabled", kind="self-lockout")
    try:
        updated = await call.ctx.store.update_tenant(tenant.id, name=body.name,
                                                     disabled=body.disabled)
    except ConflictError:
        raise _taken(body.name or "") from None
    if updated is None:
        raise Problem(404, "no such tenant")
    await call.audit(AuditEvent(kind="tenant.updated", actor=call.me.username,
                                target=tenant.id, client_ip=call.ip,
                                detail=body.model_dump(exclude_none=True)))
    if updated.disabled and not tenant.disabled:
        await _end_tenant(call, updated)
    return tenant_out(updated)


async def _end_tenant(call: Call, tenant: Tenant) -> None:
    """A tenant was disabled: every token of its users ends (their viewers close) and
    every live session of its machines is disconnected."""
    for user in await call.ctx.store.list_users(tenant_id=tenant.id):
        await revoke_tokens(call.ctx, user, "the user's tenant was disabled",
                            actor=call.me.username, client_ip=call.ip)
    for live in call.ctx.directory.live_sessions():
        if live.tenant_id == tenant.id:
            await call.ctx.directory.disconnect_session(live.session_id,
                                                        "the machine's tenant was disabled")


_ONE = "/api/tenants/{tenant_id}"
_404 = ((404, "no such tenant"),)
_TAKEN = (409, "the name is another tenant's", ("tenant-name-taken",))

ENDPOINTS = [
    Endpoint("GET", "/api/tenants", list_tenants, "Every tenant, oldest first (the default "
             "tenant first)", access="global", result=list[s.TenantOut], tag="tenants"),
    Endpoint("POST", "/api/tenants", create_tenant, "Create a tenant; give it an "
             "administrator with POST /api/users and its tenant_id", access="global",
             body=s.TenantCreateIn, result=s.TenantOut, status=201, tag="tenants",
             responses=(_TAKEN,)),
    Endpoint("GET", _ONE, get_tenant, "Get a tenant", access="global", result=s.TenantOut,
             tag="tenants", responses=_404),
    Endpoint("PATCH", _ONE, patch_tenant, "Rename, disable or enable a tenant",
             access="global", body=s.TenantPatchIn, result=s.TenantOut, tag="tenants",
             responses=(*_404, _TAKEN, (409, "the default tenant cannot be disabled",
                                        ("self-lockout",)))),
]

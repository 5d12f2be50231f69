"""Operator accounts, their permissions and client access (admin only, CONTRACT 2)."""

from __future__ import annotations

import uuid

from remote_core.errors import ConflictError
from remote_core.records import PERMISSIONS, AuditEvent, Keyset, User, tenant_of, utcnow

from ..problem import Problem
from ..revocation import revoke_tokens
from ..users import hash_password
from . import schemas as s
from .endpoint import Call, Endpoint
from .paging import Cursors, Paged, collect
from .views import created, path_id, user_out

__all__ = ["ENDPOINTS", "find_user"]

CURSORS = Cursors("users")


async def find_user(call: Call) -> User:
    """The path's account: one of the caller's tenant (a global administrator's: any)."""
    user = await call.ctx.store.get_user(path_id(call.param("user_id"), "user"))
    if user is None or not (call.me.is_global_admin or tenant_of(user.tenant_id) == call.tenant):
        raise Problem(404, "no such user")
    return user


def _not_self(call: Call, user: User, what: str) -> None:
    if user.id == call.me.id:
        raise Problem(409, f"administrators cannot {what} their own account",
                      kind="self-lockout")


async def _audit(call: Call, kind: str, user: User) -> None:
    await call.audit(AuditEvent(kind=kind, actor=call.me.username, target=user.username,
                                client_ip=call.ip, tenant_id=tenant_of(user.tenant_id)))


async def list_users(call: Call) -> Paged[s.UserOut]:
    async def fetch(after: Keyset | None, limit: int) -> list[User]:
        return await call.ctx.store.list_users(
            after=after, limit=limit, tenant_id=None if call.me.is_global_admin else call.tenant)

    page = await collect(fetch, lambda u: Keyset(created(u.created_at), u.id), CURSORS,
                         call.query)
    return Paged([user_out(u) for u in page.items], page.cursor)


async def create_user(call: Call) -> s.UserOut:
    body: s.UserCreateIn = call.body
    tenant_id = call.tenant
    if body.tenant_id is not None and body.tenant_id != call.tenant:
        tenant = (await call.ctx.store.get_tenant(body.tenant_id)
                  if call.me.is_global_admin else None)
        if tenant is None:
            raise Problem(422, "body field 'tenant_id': no such tenant",
                          extra={"errors": [{"field": "tenant_id", "message": "no such tenant"}]})
        tenant_id = tenant.id
    is_admin = body.role == "admin"
    user = User(
        id=str(uuid.uuid4()), username=body.username,
        password_hash=await hash_password(body.password),
        role="admin" if is_admin else "technician",
        permissions=tuple(PERMISSIONS) if is_admin else tuple(dict.fromkeys(body.permissions)),
        client_access=("*",) if is_admin else tuple(dict.fromkeys(body.client_access)),
        created_at=utcnow(), tenant_id=tenant_id,
    )
    try:
        user = await call.ctx.store.create_user(user)
    except ConflictError:
        raise Problem(409, f"username {body.username!r} is taken",
                      kind="username-taken") from None
    await _audit(call, "user.created", user)
    return user_out(user)


async def get_user(call: Call) -> s.UserOut:
    return user_out(await find_user(call))


async def patch_user(call: Call) -> s.UserOut:
    body: s.UserPatchIn = call.body
    user = await find_user(call)
    if body.disabled or body.role == "technician":
        _not_self(call, user, "disable or demote")
    updated = await call.ctx.store.update_user(
        user.id, role=body.role, disabled=body.disabled,
        password_hash=await hash_password(body.password) if body.password else None,
    )
    if updated is None:
        raise Problem(404, "no such user")
    await _audit(call, "user.updated", updated)
    if (body.disabled and not user.disabled) or (body.role and body.role != user.role):
        await revoke_tokens(call.ctx, updated, "the user was disabled" if body.disabled
                            else "the user's role was changed", actor=call.me.username,
                            client_ip=call.ip)
    await call.ctx.directory.user_changed(user.id, password_changed=bool(body.password))
    return user_out(updated)


async def delete_user(call: Call) -> None:
    user = await find_user(call)
    _not_self(call, user, "delete")
    if not await call.ctx.store.delete_user(user.id):
        raise Problem(404, "no such user")
    await _audit(call, "user.deleted", user)
    await call.ctx.directory.user_changed(user.id)


async def put_permissions(call: Call) -> s.UserOut:
    body: s.PermissionsIn = call.body
    user = await find_user(call)
    updated = await call.ctx.store.update_user(
        user.id, permissions=tuple(dict.fromkeys(body.permissions)))
    if updated is None:
        raise Problem(404, "no such user")
    await _audit(call, "user.permissions", updated)
    await call.ctx.directory.user_changed(user.id)
    return user_out(updated)


async def put_client_access(call: Call) -> s.UserOut:
    body: s.ClientAccessIn = call.body
    user = await find_user(call)
    updated = await call.ctx.store.update_user(
        user.id, client_access=tuple(dict.fromkeys(body.organizations)))
    if updated is None:
        raise Problem(404, "no such user")
    await _audit(call, "user.client_access", updated)
    await call.ctx.directory.user_changed(user.id)
    return user_out(updated)


_ONE = "/api/users/{user_id}"
_404 = ((404, "no such user"),)
_LOCKOUT = (409, "would lock the caller out", ("self-lockout",))

async def unlock(call: Call) -> s.UnlockOut:
    user = await find_user(call)
    was_guarded = await call.ctx.limiter.clear_account_guard(user.username)
    await call.audit(AuditEvent(
        kind="auth.account_unlocked", actor=call.me.username, target=user.username,
        client_ip=call.ip, detail={"was_guarded": was_guarded},
        tenant_id=tenant_of(user.tenant_id)))
    return s.UnlockOut(was_guarded=was_guarded)


ENDPOINTS = [
    Endpoint("GET", "/api/users", list_users, "List the tenant's users, oldest first (a "
             "global administrator's list holds every tenant's)", access="admin",
             query=s.PageQuery, result=list[s.UserOut], tag="users"),
    Endpoint("POST", "/api/users", create_user, "Create a user of the caller's tenant (a "
             "global administrator names any tenant: a new tenant's first administrator)",
             access="admin", body=s.UserCreateIn, result=s.UserOut, status=201, tag="users",
             responses=((409, "username taken (usernames are unique across tenants)",
                         ("username-taken",)),)),
    Endpoint("GET", _ONE, get_user, "Get a user", access="admin", result=s.UserOut,
             tag="users", responses=_404),
    Endpoint("PATCH", _ONE, patch_user, "Change role, disabled flag or password",
             access="admin", body=s.UserPatchIn, result=s.UserOut, tag="users",
             responses=(*_404, _LOCKOUT)),
    Endpoint("DELETE", _ONE, delete_user, "Delete a user", access="admin", status=204,
             tag="users", responses=(*_404, _LOCKOUT)),
    Endpoint("PUT", _ONE + "/permissions", put_permissions, "Replace a user's permissions",
             access="admin", body=s.PermissionsIn, result=s.UserOut, tag="users",
             responses=_404),
    Endpoint("POST", _ONE + "/unlock", unlock,
             "Lift the account's guard against distributed guessing at once and forget its "
             "failed logins (the owner called from a new address); audited",
             access="admin", result=s.UnlockOut, tag="users", responses=_404),
    Endpoint("PUT", _ONE + "/client-access", put_client_access,
             "Replace the organizations a user sees (['*'] = all)", access="admin",
             body=s.ClientAccessIn, result=s.UserOut, tag="users", responses=_404),
]

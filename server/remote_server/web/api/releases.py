"""Releases, the agents' version poll and update pushes (SPEC 4, 9; CONTRACT 2).

Releases come in channels, one a tenant: the default tenant's (published by global
administrators) is every tenant's; a tenant's administrators publish to their own, which
only their machines see. An agent's poll names its channel with its key."""

from __future__ import annotations

from remote_core.errors import ConflictError, SessionRefused
from remote_core.protocol import pb
from remote_core.records import DEFAULT_TENANT_ID, AuditEvent, Keyset, Release, tenant_of, utcnow
from remote_core.semver import is_semver, semver_key
from remote_core.types import AgentCredential

from ...relay.auth import authenticate, authenticators, looks_like_jwt, looks_like_support_code
from ..problem import Problem
from . import schemas as s
from .endpoint import Call, Endpoint, caller
from .machines import find_machine
from .paging import Cursors, Paged, collect
from .views import created, path_id, release_out

__all__ = ["ENDPOINTS", "newest_release"]

CURSORS = Cursors("releases")


async def newest_release(call: Call, tenant_id: str) -> Release | None:
    """The newest release by semantic version that ``tenant_id``'s machines may install."""
    releases = [r for r in await call.ctx.store.list_releases(tenant_id=tenant_id)
                if is_semver(r.version)]
    return max(releases, key=lambda r: semver_key(r.version), default=None)


async def _release(call: Call) -> Release:
    """The path's release, if it is in a channel the caller's tenant reads (else 404)."""
    release = await call.ctx.store.get_release(path_id(call.param("version"), "release"))
    if release is None or tenant_of(release.tenant_id) not in (DEFAULT_TENANT_ID, call.tenant):
        raise Problem(404, "no such release")
    return release


async def _own_release(call: Call) -> Release:
    """The path's release, if it is the caller's tenant's to change."""
    release = await _release(call)
    if tenant_of(release.tenant_id) != call.tenant:
        raise Problem(403, "this release is the whole server's: only global administrators "
                           "change it")
    return release


async def _agent_tenant(call: Call) -> str:
    """Whose channel an agent's poll reads: its key's machine's tenant (``Authorization:
    Bearer <agent key>``), an operator's own tenant (their login token), else the default
    tenant's. A support code is no credential here: it would be a guessing oracle beside
    the code limit."""
    scheme, _, token = call.request.headers.get("authorization", "").partition(" ")
    token = token.strip()
    if not scheme and not token:
        return DEFAULT_TENANT_ID
    if scheme.lower() != "bearer" or not token or looks_like_support_code(token):
        raise Problem.unauthorized("the version poll takes an agent key or a login token "
                                   "as a bearer token, or no credential")
    if looks_like_jwt(token):
        user, _claims = await caller(call.request, call.ctx)
        return tenant_of(user.tenant_id)
    try:
        identity = await authenticate(authenticators(call.ctx.plugins, call.ctx.store),
                                      AgentCredential(token=token, agent_id=""))
    except SessionRefused as exc:
        raise Problem.unauthorized(f"agent credential refused: {exc}") from None
    machine = (await call.ctx.store.get_machine_by_id(identity.agent_id)
               if identity.authoritative else None)
    return tenant_of(machine.tenant_id) if machine is not None else DEFAULT_TENANT_ID


async def list_releases(call: Call) -> Paged[s.ReleaseOut]:
    async def fetch(after: Keyset | None, limit: int) -> list[Release]:
        return await call.ctx.store.list_releases(after=after, limit=limit,
                                                  tenant_id=call.tenant)

    page = await collect(fetch, lambda r: Keyset(created(r.created_at), r.version), CURSORS,
                         call.query)
    return Paged([release_out(r) for r in page.items], page.cursor)


async def get_release(call: Call) -> s.ReleaseOut:
    return release_out(await _release(call))


async def create_release(call: Call) -> s.ReleaseOut:
    body: s.ReleaseIn = call.body
    release = Release(version=body.version, download_url=body.download_url,
                      checksum_sha256=body.checksum_sha256.lower(), mandatory=body.mandatory,
                      notes=body.notes, created_at=utcnow(), tenant_id=call.tenant)
    try:
        release = await call.ctx.store.create_release(release)
    except ConflictError:
        raise Problem(409, f"release {body.version} exists", kind="release-exists") from None
    await call.audit(AuditEvent(kind="release.created", actor=call.me.username,
                                target=release.version, client_ip=call.ip))
    return release_out(release)


async def patch_release(call: Call) -> s.ReleaseOut:
    body: s.ReleasePatchIn = call.body
    release = await _own_release(call)
    updated = await call.ctx.store.update_release(
        release.version, download_url=body.download_url,
        checksum_sha256=body.checksum_sha256.lower() if body.checksum_sha256 else None,
        mandatory=body.mandatory, notes=body.notes)
    if updated is None:
        raise Problem(404, "no such release")
    await call.audit(AuditEvent(kind="release.updated", actor=call.me.username,
                                target=release.version, client_ip=call.ip))
    return release_out(updated)


async def delete_release(call: Call) -> None:
    release = await _own_release(call)
    if not await call.ctx.store.delete_release(release.version):
        raise Problem(404, "no such release")
    await call.audit(AuditEvent(kind="release.deleted", actor=call.me.username,
                                target=release.version, client_ip=call.ip))


async def version(call: Call) -> s.VersionOut:
    release = await newest_release(call, await _agent_tenant(call))
    if release is None:
        raise Problem(404, "no release is published")
    return s.VersionOut(version=release.version, download_url=release.download_url,
                        checksum_sha256=release.checksum_sha256, mandatory=release.mandatory)


async def push_update(call: Call) -> s.UpdatePushedOut:
    body: s.UpdatePushIn = call.body
    machine = await find_machine(call)
    if body.version:
        release = await call.ctx.store.get_release(body.version)
        if release is not None and tenant_of(release.tenant_id) not in (DEFAULT_TENANT_ID,
                                                                         call.tenant):
            release = None
    else:
        release = await newest_release(call, call.tenant)
    if release is None:
        raise Problem(404, "no such release")
    registry = call.ctx.directory
    info = pb.UpdateInfo(version=release.version, download_url=release.download_url,
                         checksum_sha256=release.checksum_sha256, mandatory=release.mandatory)
    command = pb.AdminCommand(command=pb.ADMIN_UPDATE, reason=f"update to {release.version}")
    # The agent learns what to install before it is told to install it.
    if not (registry.is_online(machine.agent_id)
            and await registry.send_to_agent(machine.agent_id, "update_info", info)
            and await registry.send_to_agent(machine.agent_id, "admin_command", command)):
        raise Problem(409, "the machine is not connected", kind="machine-offline")
    await call.audit(AuditEvent(kind="machine.update_pushed", agent_id=machine.agent_id,
                                actor=call.me.username, target=machine.agent_id,
                                client_ip=call.ip, detail={"version": release.version}))
    return s.UpdatePushedOut(agent_id=machine.agent_id, version=release.version)


_ONE = "/api/releases/{version}"
_404 = ((404, "no such release"),)
_WHOLE_SERVER = (403, "a release of the whole server, for global administrators only")

ENDPOINTS = [
    Endpoint("GET", "/api/version", version, "The newest release by semantic version "
             "(agents poll this): of the whole server's channel, and of the tenant's own "
             "when the agent sends its key (or an operator their login token) as "
             "Authorization: Bearer", access="public",
             result=s.VersionOut, tag="releases",
             responses=((401, "a credential that is no agent key, or a refused one"),
                        (404, "no release is published"))),
    Endpoint("GET", "/api/releases", list_releases, "List the releases the caller's tenant "
             "reads: the whole server's (the default tenant's) and its own, the newest "
             "published first (GET /api/version names the newest by semantic version)",
             query=s.PageQuery, result=list[s.ReleaseOut], tag="releases"),
    Endpoint("POST", "/api/releases", create_release, "Publish a release to the caller's "
             "tenant's channel (a global administrator's: every tenant's)", access="admin",
             body=s.ReleaseIn, result=s.ReleaseOut, status=201, tag="releases",
             responses=((409, "the version exists", ("release-exists",)),)),
    Endpoint("GET", _ONE, get_release, "Get a release", result=s.ReleaseOut,
             tag="releases", responses=_404),
    Endpoint("PATCH", _ONE, patch_release, "Edit a release of the caller's tenant",
             access="admin", body=s.ReleasePatchIn, result=s.ReleaseOut, tag="releases",
             responses=(*_404, _WHOLE_SERVER)),
    Endpoint("DELETE", _ONE, delete_release, "Delete a release of the caller's tenant",
             access="admin", status=204, tag="releases", responses=(*_404, _WHOLE_SERVER)),
    Endpoint("POST", "/api/machines/{agent_id}/update", push_update,
             "Push an update to a connected machine (AdminCommand ADMIN_UPDATE and "
             "UpdateInfo)", access="admin", body=s.UpdatePushIn, body_optional=True,
             result=s.UpdatePushedOut, status=202, tag="machines",
             responses=((404, "no such machine or release"),
                        (409, "the machine is not connected", ("machine-offline",)))),
]

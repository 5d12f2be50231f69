"""Per-agent keys (SPEC 4, 5.2): issue (the plain key shown once), list, revoke."""

from __future__ import annotations

from remote_core.records import AgentKey, AuditEvent, Keyset

from ..problem import Problem
from . import schemas as s
from .endpoint import Call, Endpoint
from .machines import find_machine
from .paging import Cursors, Paged, collect
from .views import created, key_out, path_id

__all__ = ["ENDPOINTS"]

CURSORS = Cursors("keys")


async def issue_key(call: Call) -> s.IssuedKeyOut:
    body: s.KeyCreateIn = call.body
    machine = await find_machine(call)
    issuer = call.ctx.plugins.key_issuer()
    if issuer is None:
        loaded = ", ".join(m.name for m in call.ctx.plugins.auth_methods()) or "none"
        raise Problem(501, "no loaded authentication method issues agent keys "
                           f"(loaded methods: {loaded}); load auth_agentkey or a plugin "
                           "whose AuthMethod has issue_key")
    plain, key_hash = issuer()
    key = await call.ctx.store.add_agent_key(machine.agent_id, key_hash, body.label)
    await call.audit(AuditEvent(kind="agent_key.issued", agent_id=machine.agent_id,
                                actor=call.me.username, target=key.id,
                                client_ip=call.ip, detail={"label": body.label},
                                tenant_id=call.tenant))
    return s.IssuedKeyOut(**key_out(key).model_dump(), key=plain)


async def list_keys(call: Call) -> Paged[s.KeyOut]:
    machine = await find_machine(call)

    async def fetch(after: Keyset | None, limit: int) -> list[AgentKey]:
        return await call.ctx.store.list_agent_keys(machine.agent_id, after=after, limit=limit)

    page = await collect(fetch, lambda k: Keyset(created(k.created_at), k.id), CURSORS,
                         call.query)
    return Paged([key_out(k) for k in page.items], page.cursor)


async def revoke_key(call: Call) -> None:
    machine = await find_machine(call)
    key_id = path_id(call.param("key_id"), "key")
    key = await call.ctx.store.revoke_agent_key(machine.agent_id, key_id)
    if key is None:
        raise Problem(404, "this machine has no such key")
    closed = await call.ctx.directory.close_agents_with_key(key.id, "agent key revoked")
    await call.audit(AuditEvent(kind="agent_key.revoked", agent_id=machine.agent_id,
                                actor=call.me.username, target=key.id,
                                client_ip=call.ip, detail={"sockets_closed": closed},
                                tenant_id=call.tenant))


_KEYS = "/api/machines/{agent_id}/keys"

ENDPOINTS = [
    Endpoint("POST", _KEYS, issue_key, "Issue an agent key; the plain key is in this "
             "response only", access="admin", body=s.KeyCreateIn, body_optional=True,
             result=s.IssuedKeyOut, status=201, tag="keys",
             responses=((404, "no such machine"),
                        (501, "no loaded authentication method issues agent keys"))),
    Endpoint("GET", _KEYS, list_keys, "List a machine's keys, oldest first (never their "
             "hashes)", access="admin", query=s.PageQuery, result=list[s.KeyOut], tag="keys",
             responses=((404, "no such machine"),)),
    Endpoint("DELETE", _KEYS + "/{key_id}", revoke_key,
             "Revoke a key; live agent sockets that used it are closed", access="admin",
             status=204, tag="keys", responses=((404, "no such machine or key"),)),
]

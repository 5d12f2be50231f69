"""Which machine an agent is (SPEC 5.2, 5.4): keyed agents are their key's machine; others
are found through the machine_uid index first, then by their agent_id."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping

from remote_core.errors import SessionRefused
from remote_core.interfaces import Store
from remote_core.records import DEFAULT_TENANT_ID, tenant_of
from remote_core.types import AgentIdentity

__all__ = ["MAX_ID", "clean_id", "is_keyed", "resolve_unkeyed"]

log = logging.getLogger(__name__)

MAX_ID = 128


def clean_id(value: str, what: str) -> str:
    """An identifier the agent chose, trimmed; refused unless short and printable."""
    value = value.strip()
    if not value or len(value) > MAX_ID or not value.isprintable():
        raise SessionRefused(f"{what} must be 1-{MAX_ID} printable characters")
    return value


async def is_keyed(store: Store, agent_id: str) -> bool:
    """Whether the machine holds a key that is not revoked."""
    return any(k.revoked_at is None for k in await store.list_agent_keys(agent_id))


async def resolve_unkeyed(store: Store, uid_index: Mapping[str, str],
                          identity: AgentIdentity,
                          tenant_id: str = DEFAULT_TENANT_ID) -> tuple[str, str | None]:
    """(agent_id, machine_uid) of an agent without a key, joining ``tenant_id``.

    The uid index (then the database, for machines another process registered)
    is consulted before the claimed agent_id. A keyed machine is only ever
    reached with its key: its uid is no alias anyone may claim, and its
    agent_id is refused to everyone else. A machine another tenant holds is
    never joined: the agent becomes a machine of its own here (a new id, no uid),
    so neither tenant sees the other's sessions.
    """
    claimed = clean_id(identity.agent_id, "agent_id")
    uid = clean_id(identity.machine_uid, "machine_uid") if identity.machine_uid else None
    keyed: dict[str, bool] = {}  # one read per machine: an admission storm's round trips

    async def is_keyed_once(agent_id: str) -> bool:
        if agent_id not in keyed:
            keyed[agent_id] = await is_keyed(store, agent_id)
        return keyed[agent_id]

    holder, found = None, None
    if uid:
        holder = uid_index.get(uid)
        if holder is None:
            found = await store.get_machine_by_uid(uid)
            holder = found.agent_id if found is not None else None
        if holder is not None and await is_keyed_once(holder):
            log.warning("an agent without a key claimed the machine_uid of keyed machine %s; "
                        "the uid is ignored", holder)
            holder = uid = found = None
    agent_id = holder or claimed
    if await is_keyed_once(agent_id):
        raise SessionRefused("this machine has an agent key; it must connect with that key")
    held = found if found is not None else await store.get_machine_by_id(agent_id)
    if held is not None and tenant_of(held.tenant_id) != tenant_id:
        return str(uuid.uuid4()), None
    return agent_id, uid

"""What a provider's groups grant here: a role, permissions, organizations and a tenant."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from remote_core.records import PERMISSIONS

from .config import OidcConfig

__all__ = ["Grant", "grant_for"]


@dataclass(frozen=True)
class Grant:
    """The account a set of groups adds up to."""

    role: str
    permissions: tuple[str, ...]
    client_access: tuple[str, ...]
    tenants: frozenset[str] = frozenset()
    """The names of the tenants the groups map to: none (the default tenant), one, or
    more (refused: one sign-in is one tenant's)."""


def grant_for(config: OidcConfig, groups: Iterable[str]) -> Grant | None:
    """The grant for ``groups``; ``None`` when no group of them is mapped to a role.

    Admin beats technician; a technician's permissions and organizations are the union
    over their groups. Admins hold every permission and every organization.
    """
    groups = list(groups)
    mine = [g for g in groups if g in config.group_roles]
    if not mine:
        return None
    tenants = frozenset(config.group_tenants[g] for g in groups if g in config.group_tenants)
    if any(config.group_roles[g] == "admin" for g in mine):
        return Grant("admin", tuple(PERMISSIONS), ("*",), tenants)
    permissions = {p for g in mine for p in config.group_permissions.get(g, ())}
    access = {c for g in groups for c in config.group_client_access.get(g, ())}
    return Grant("technician", tuple(p for p in PERMISSIONS if p in permissions),
                 tuple(sorted(access)), tenants)

"""Single sign-on's settings (``oidc_*``, ``REMOTE_SUPPORT_OIDC_*``), checked at start-up.

The group mappings are lists of ``group=value`` entries (``ops=admin,techs=technician``),
so they read the same from the TOML file and from the environment.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from remote_core.errors import ConfigError
from remote_core.records import PERMISSIONS

if TYPE_CHECKING:
    from ...settings import ServerSettings

__all__ = ["ROLES", "START_PATH", "OidcConfig"]

ROLES = ("admin", "technician")
START_PATH = "/auth/oidc/start"
"""Where the console's "Sign in with ..." button leads."""

@dataclass(frozen=True, repr=False)
class OidcConfig:
    """Where the provider is, who this server is to it, and what its groups grant."""

    issuer: str
    client_id: str
    client_secret: str
    redirect_url: str
    provider_name: str = "single sign-on"
    scopes: tuple[str, ...] = ("openid", "profile", "email", "groups")
    username_claim: str = "preferred_username"
    groups_claim: str = "groups"
    group_roles: Mapping[str, str] = field(default_factory=dict)
    group_permissions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    group_client_access: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    group_tenants: Mapping[str, str] = field(default_factory=dict)
    create_users: bool = False
    allow_http_loopback: bool = False
    ca_file: str | None = None

    def __repr__(self) -> str:  # the client secret never reaches a log line
        return f"OidcConfig(issuer={self.issuer!r}, client_id={self.client_id!r})"

    @property
    def console_url(self) -> str:
        """Where a finished login lands: the console on the redirect URL's origin."""
        parts = urlsplit(self.redirect_url)
        return f"{parts.scheme}://{parts.netloc}/console/"

    @classmethod
    def from_settings(cls, settings: ServerSettings) -> OidcConfig | None:
        """The configuration, ``None`` when ``oidc_issuer`` is unset (single sign-on off);
        :class:`ConfigError` names the setting that is wrong."""
        if not settings.oidc_issuer:
            return None
        missing = [f"oidc_{n}" for n in ("client_id", "client_secret", "redirect_url")
                   if not getattr(settings, f"oidc_{n}")]
        if missing:
            raise ConfigError(f"single sign-on (oidc_issuer) needs the setting(s) {missing}")
        assert settings.oidc_client_id and settings.oidc_client_secret
        assert settings.oidc_redirect_url
        roles = _pairs("oidc_group_roles", settings.oidc_group_roles)
        config = cls(
            issuer=settings.oidc_issuer.rstrip("/"),
            client_id=settings.oidc_client_id,
            client_secret=settings.oidc_client_secret,
            redirect_url=settings.oidc_redirect_url,
            provider_name=settings.oidc_provider_name,
            scopes=settings.oidc_scopes,
            username_claim=settings.oidc_username_claim,
            groups_claim=settings.oidc_groups_claim,
            group_roles={group: values[-1] for group, values in roles.items()},
            group_permissions=_pairs("oidc_group_permissions", settings.oidc_group_permissions),
            group_client_access=_pairs("oidc_group_client_access",
                                       settings.oidc_group_client_access),
            group_tenants={group: names[-1] for group, names in _pairs(
                "oidc_group_tenants", settings.oidc_group_tenants).items()},
            create_users=settings.oidc_create_users,
            allow_http_loopback=settings.oidc_allow_http_loopback,
            ca_file=settings.oidc_ca_file,
        )
        config._check()
        return config

    def _check(self) -> None:
        _check_url("issuer", self.issuer, self.allow_http_loopback)
        _check_url("redirect_url", self.redirect_url, self.allow_http_loopback)
        if "openid" not in self.scopes:
            raise ConfigError("setting 'oidc_scopes' must include 'openid'")
        for group, role in self.group_roles.items():
            if role not in ROLES:
                raise ConfigError(f"setting 'oidc_group_roles': {group!r} must be admin or "
                                  f"technician, got {role!r}")
        for group, perms in self.group_permissions.items():
            bad = sorted(set(perms) - set(PERMISSIONS))
            if bad:
                raise ConfigError(f"setting 'oidc_group_permissions': {group!r} has unknown "
                                  f"permission(s) {bad}; known: {list(PERMISSIONS)}")
        if not self.group_roles:
            raise ConfigError("single sign-on needs 'oidc_group_roles' (which provider groups "
                              "may log in, as which role): nobody could log in without it")


def _check_url(name: str, url: str, allow_http_loopback: bool) -> None:
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return
    if parts.scheme == "http" and parts.hostname and allow_http_loopback:
        try:
            if ipaddress.ip_address(parts.hostname).is_loopback:
                return
        except ValueError:
            if parts.hostname == "localhost":
                return
    raise ConfigError(f"setting 'oidc_{name}' must be an https:// URL (http:// only on a "
                      f"loopback address, with oidc_allow_http_loopback), got {url!r}")


def _pairs(name: str, entries: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """``group=value`` entries, each group's values in order (a group may repeat)."""
    found: dict[str, tuple[str, ...]] = {}
    for entry in entries:
        group, sep, value = entry.partition("=")
        if not sep or not group.strip() or not value.strip():
            raise ConfigError(f"setting {name!r}: expected group=value entries, got {entry!r}")
        found[group.strip()] = (*found.get(group.strip(), ()), value.strip())
    return found

"""The plugin's options (``[plugins.auth_oidc]``), checked once at start-up.

Tables (``group_roles`` ...) may also come from the environment as JSON text, since
``REMOTE_SUPPORT_PLUGIN_AUTH_OIDC_*`` variables are strings.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from remote_core.errors import ConfigError
from remote_core.records import PERMISSIONS

__all__ = ["OidcConfig"]

ROLES = ("admin", "technician")


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
    def from_options(cls, options: Mapping[str, Any]) -> OidcConfig:
        """Build and check; :class:`ConfigError` names the option that is wrong."""
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ConfigError(f"plugin auth_oidc: unknown option(s) {unknown}; "
                              f"known: {sorted(known)}")
        missing = [n for n in ("issuer", "client_id", "client_secret", "redirect_url")
                   if not str(options.get(n) or "").strip()]
        if missing:
            raise ConfigError(f"plugin auth_oidc needs the option(s) {missing}")
        allow_http = _flag(options, "allow_http_loopback")
        config = cls(
            issuer=str(options["issuer"]).rstrip("/"),
            client_id=str(options["client_id"]),
            client_secret=str(options["client_secret"]),
            redirect_url=str(options["redirect_url"]),
            provider_name=str(options.get("provider_name") or "single sign-on"),
            scopes=_words(options.get("scopes"), cls.scopes),
            username_claim=str(options.get("username_claim") or cls.username_claim),
            groups_claim=str(options.get("groups_claim") or cls.groups_claim),
            group_roles={k: str(v) for k, v in _table(options, "group_roles").items()},
            group_permissions={k: _words(v, ()) for k, v in
                               _table(options, "group_permissions").items()},
            group_client_access={k: _words(v, ()) for k, v in
                                 _table(options, "group_client_access").items()},
            create_users=_flag(options, "create_users"),
            allow_http_loopback=allow_http,
            ca_file=str(options["ca_file"]) if options.get("ca_file") else None,
        )
        config._check()
        return config

    def _check(self) -> None:
        _check_url("issuer", self.issuer, self.allow_http_loopback)
        _check_url("redirect_url", self.redirect_url, self.allow_http_loopback)
        if "openid" not in self.scopes:
            raise ConfigError("plugin auth_oidc: option 'scopes' must include 'openid'")
        for group, role in self.group_roles.items():
            if role not in ROLES:
                raise ConfigError(f"plugin auth_oidc: group_roles[{group!r}] must be admin or "
                                  f"technician, got {role!r}")
        for group, perms in self.group_permissions.items():
            bad = sorted(set(perms) - set(PERMISSIONS))
            if bad:
                raise ConfigError(f"plugin auth_oidc: group_permissions[{group!r}] has unknown "
                                  f"permission(s) {bad}; known: {list(PERMISSIONS)}")
        if not self.group_roles:
            raise ConfigError("plugin auth_oidc needs 'group_roles' (which provider groups "
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
    raise ConfigError(f"plugin auth_oidc: option {name!r} must be an https:// URL (http:// "
                      f"only on a loopback address, with allow_http_loopback), got {url!r}")


def _flag(options: Mapping[str, Any], name: str) -> bool:
    value = options.get(name, False)
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off", ""}:
        return False
    raise ConfigError(f"plugin auth_oidc: option {name!r} must be true or false, got {value!r}")


def _words(value: Any, default: tuple[str, ...]) -> tuple[str, ...]:
    if value is None or value == "":
        return default
    if isinstance(value, str):
        return tuple(w for w in value.replace(",", " ").split() if w)
    if isinstance(value, list | tuple):
        return tuple(str(w) for w in value)
    raise ConfigError(f"plugin auth_oidc: expected a list of words, got {value!r}")


def _table(options: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = options.get(name) or {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ConfigError(f"plugin auth_oidc: option {name!r} must be a table (in the "
                              "environment: a JSON object)") from None
    if not isinstance(value, Mapping):
        raise ConfigError(f"plugin auth_oidc: option {name!r} must be a table, got {value!r}")
    return {str(k): v for k, v in value.items()}

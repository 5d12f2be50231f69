"""The plugin's options (``[plugins.webhooks]``, ``REMOTE_SUPPORT_PLUGIN_WEBHOOKS_*``), checked.

One target is ``url`` + ``secret`` (+ ``events``); more are named, as TOML tables
``[plugins.webhooks.targets.NAME]`` or as variables ``..._WEBHOOKS_TARGET_NAME_URL``
(``_SECRET``, ``_EVENTS``). Every bad value is a :class:`ConfigError` naming it.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from remote_core.errors import ConfigError

from .events import EVENTS

__all__ = ["Network", "Target", "WebhookConfig"]

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_TARGET_KEY = re.compile(r"^target_([a-z][a-z0-9_]*)_(url|secret|events)$")
MIN_SECRET = 16
"""Characters a target's secret needs at least: a short one is guessed offline from one
signed request."""

_NUMBERS: dict[str, tuple[type, float]] = {
    # option: (type, smallest allowed value)
    "timeout": (float, 0.001),
    "max_attempts": (int, 1),
    "backoff": (float, 0.0),
    "backoff_max": (float, 0.0),
    "queue_size": (int, 1),
    "concurrency": (int, 1),
    "login_failure_threshold": (int, 1),
    "login_failure_window": (float, 1.0),
    "retention_days": (float, 0.001),
}
_KNOWN = {"url", "secret", "events", "targets", "allow_http_hosts", "allow_addresses",
          "ca_bundle", *_NUMBERS}


@dataclass(frozen=True)
class Target:
    """One receiver: where events go, the secret that signs them, which events it wants."""

    name: str
    url: str
    secret: str = field(repr=False)
    events: frozenset[str] = EVENTS

    @property
    def shown_url(self) -> str:
        """The URL as logs and the console show it: scheme, host and port only (many
        services put a token in the path)."""
        parts = urlsplit(self.url)
        rest = "/…" if parts.path.strip("/") or parts.query else "/"
        return f"{parts.scheme}://{parts.netloc}{rest}"


@dataclass(frozen=True)
class WebhookConfig:
    targets: tuple[Target, ...] = ()
    allow_http_hosts: frozenset[str] = frozenset()
    """Host names that may be reached over plain ``http://`` (a receiver on a trusted
    network without TLS); every other target must be ``https://``."""
    allow_addresses: tuple[Network, ...] = ()
    """Addresses or networks a target may resolve to although they are not global
    (loopback, private, link-local ...)."""
    ca_bundle: str | None = None
    """A PEM file of the CAs receivers' certificates are checked against (default: the
    system's); verification is never off."""
    timeout: float = 10.0
    max_attempts: int = 6
    backoff: float = 2.0
    """Seconds before the first retry; each further retry waits twice as long, less a
    random part (jitter) of up to half."""
    backoff_max: float = 600.0
    queue_size: int = 1000
    concurrency: int = 4
    login_failure_threshold: int = 5
    login_failure_window: float = 300.0
    retention_days: float = 30.0

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> WebhookConfig:
        """The configuration the options describe; :class:`ConfigError` on a bad one."""
        unknown = sorted(k for k in options if k not in _KNOWN and not _TARGET_KEY.match(k))
        if unknown:
            raise ConfigError(f"unknown webhooks option(s) {unknown}; known: {sorted(_KNOWN)} "
                              "and target_<name>_url|secret|events")
        http_hosts = frozenset(h.lower() for h in _items(options, "allow_http_hosts"))
        numbers = {name: _number(options, name, kind, low)
                   for name, (kind, low) in _NUMBERS.items() if name in options}
        ca_bundle = options.get("ca_bundle") or None
        if ca_bundle is not None and not isinstance(ca_bundle, str):
            raise ConfigError("webhooks option 'ca_bundle' must be a file path")
        targets = [_target(name, spec, http_hosts) for name, spec in _target_specs(options)]
        return cls(targets=tuple(targets), allow_http_hosts=http_hosts,
                   allow_addresses=tuple(_network(a) for a in _items(options,
                                                                      "allow_addresses")),
                   ca_bundle=ca_bundle, **numbers)


def _target_specs(options: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    specs: dict[str, dict[str, Any]] = {}
    if any(k in options for k in ("url", "secret", "events")):
        specs["default"] = {k: options[k] for k in ("url", "secret", "events") if k in options}
    tables = options.get("targets", {})
    if not isinstance(tables, Mapping):
        raise ConfigError("webhooks option 'targets' must be tables "
                          "[plugins.webhooks.targets.NAME] with url and secret")
    for name, table in tables.items():
        if not isinstance(table, Mapping):
            raise ConfigError(f"webhooks target {name!r} must be a table with url and secret")
        specs.setdefault(str(name), {}).update(table)
    for key, value in options.items():
        match = _TARGET_KEY.match(key)
        if match:
            specs.setdefault(match[1], {})[match[2]] = value
    return sorted(specs.items())


def _target(name: str, spec: Mapping[str, Any], http_hosts: frozenset[str]) -> Target:
    where = f"webhooks target {name!r}"
    if not _NAME.match(name):
        raise ConfigError(f"{where}: a name is lower-case letters, digits and '_'")
    extra = sorted(set(spec) - {"url", "secret", "events"})
    if extra:
        raise ConfigError(f"{where}: unknown key(s) {extra}; known: url, secret, events")
    url, secret = spec.get("url"), spec.get("secret")
    if not isinstance(url, str) or not url:
        raise ConfigError(f"{where} needs a url")
    if not isinstance(secret, str) or len(secret) < MIN_SECRET:
        raise ConfigError(f"{where} needs a secret of at least {MIN_SECRET} characters "
                          "(it signs every request)")
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if not host:
        raise ConfigError(f"{where}: url must name a host (https://host/path)")
    if parts.username is not None or parts.password is not None:
        raise ConfigError(f"{where}: url must not carry credentials (the secret signs the "
                          "request instead)")
    if parts.scheme == "http":
        if host not in http_hosts:
            raise ConfigError(f"{where}: url is plain http; use https, or name {host!r} in "
                              "the webhooks option allow_http_hosts")
    elif parts.scheme != "https":
        raise ConfigError(f"{where}: url must be https:// (got {parts.scheme or 'none'}://)")
    try:
        _ = parts.port
    except ValueError:
        raise ConfigError(f"{where}: url has a bad port") from None
    wanted = frozenset(_items(spec, "events")) or EVENTS
    unknown = sorted(wanted - EVENTS)
    if unknown:
        raise ConfigError(f"{where}: unknown event(s) {unknown}; known: {sorted(EVENTS)}")
    return Target(name=name, url=url, secret=secret, events=wanted)


def _items(options: Mapping[str, Any], name: str) -> list[str]:
    raw = options.get(name)
    if raw is None:
        return []
    if isinstance(raw, str):
        return [p.strip() for p in raw.split(",") if p.strip()]
    if isinstance(raw, list | tuple):
        return [str(p).strip() for p in raw if str(p).strip()]
    raise ConfigError(f"webhooks option {name!r} must be a list or comma-separated text")


def _number(options: Mapping[str, Any], name: str, kind: type, low: float) -> Any:
    raw = options[name]
    try:
        if isinstance(raw, bool):
            raise ValueError
        value = kind(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"webhooks option {name!r} must be a number, got {raw!r}") from None
    if value < low:
        raise ConfigError(f"webhooks option {name!r} must be at least {low}, got {value}")
    return value


def _network(text: str) -> Network:
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        raise ConfigError(f"webhooks option 'allow_addresses': {text!r} is not an address "
                          "or network (127.0.0.1, 10.0.0.0/8, ::1)") from None

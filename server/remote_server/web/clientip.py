"""The client's IP address, as trusted as the deployment allows (CONTRACT 2).

The socket peer is the truth. ``X-Forwarded-For`` is read only when that peer
is one of ``settings.trusted_proxies``, and then from the right: the first hop
that is not itself a trusted proxy is the client, so a client cannot prepend
an address of its choosing.

Requests that carry ``X-Forwarded-For`` from a peer that is not trusted are
most likely a reverse proxy nobody listed: every client behind it then shares
its address, and so its rate limits and lockouts. That is logged once per
process, with the setting that fixes it.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from ..settings import ServerSettings
from .logonce import Once

__all__ = ["TRUSTED_PROXIES_SETTING", "client_ip", "in_networks"]

log = logging.getLogger(__name__)

TRUSTED_PROXIES_SETTING = "REMOTE_SUPPORT_TRUSTED_PROXIES"

_untrusted_forwarder = Once(limit=1)

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@lru_cache(maxsize=16)
def _networks(entries: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(entry.strip(), strict=False) for entry in entries)


def _trusted(address: str, networks: tuple[Network, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in net for net in networks)


def in_networks(address: str, entries: tuple[str, ...]) -> bool:
    """Whether ``address`` is in one of the networks ``entries`` lists (settings' text)."""
    return _trusted(address, _networks(entries))


def _forwarded_for(scope: Mapping[str, Any]) -> list[str]:
    hops: list[str] = []
    for name, value in scope.get("headers", ()):
        if name == b"x-forwarded-for":
            hops.extend(h.strip() for h in value.decode("latin-1").split(","))
    return [h for h in hops if h]


def _warn_untrusted_forwarder(scope: Mapping[str, Any], address: str) -> None:
    if not any(name == b"x-forwarded-for" for name, _ in scope.get("headers", ())):
        return
    if _untrusted_forwarder.first("x-forwarded-for"):
        log.warning("requests carry X-Forwarded-For from %s, which is not a trusted proxy: the "
                    "header is ignored, so per-client rate limits and lockouts apply to %s "
                    "itself, shared by every client behind it; if it is your reverse proxy, "
                    "add its address to %s (logged once)", address, address,
                    TRUSTED_PROXIES_SETTING,
                    extra={"event": "untrusted_forwarder", "client_ip": address})


def client_ip(scope: Mapping[str, Any], settings: ServerSettings) -> str:
    """The socket peer; ``X-Forwarded-For`` only when the peer is a trusted proxy."""
    peer = scope.get("client")
    address = str(peer[0]) if peer else "unknown"
    networks = _networks(tuple(settings.trusted_proxies)) if settings.trusted_proxies else ()
    if not networks or not _trusted(address, networks):
        _warn_untrusted_forwarder(scope, address)
        return address
    for hop in reversed(_forwarded_for(scope)):
        try:
            ipaddress.ip_address(hop)
        except ValueError:
            return address  # a malformed chain is not believed at all
        if not _trusted(hop, networks):
            return hop
        address = hop
    return address

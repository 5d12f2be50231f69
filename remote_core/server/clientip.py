"""The client's IP address, as trusted as the deployment allows (CONTRACT 2).

The socket peer is the truth. ``X-Forwarded-For`` is read only when that peer
is one of ``settings.trusted_proxies``, and then from the right: the first hop
that is not itself a trusted proxy is the client, so a client cannot prepend
an address of its choosing.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from ..settings import Settings

__all__ = ["client_ip"]

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


def _forwarded_for(scope: Mapping[str, Any]) -> list[str]:
    hops: list[str] = []
    for name, value in scope.get("headers", ()):
        if name == b"x-forwarded-for":
            hops.extend(h.strip() for h in value.decode("latin-1").split(","))
    return [h for h in hops if h]


def client_ip(scope: Mapping[str, Any], settings: Settings) -> str:
    """The socket peer; ``X-Forwarded-For`` only when the peer is a trusted proxy."""
    peer = scope.get("client")
    address = str(peer[0]) if peer else "unknown"
    if not settings.trusted_proxies:
        return address
    networks = _networks(tuple(settings.trusted_proxies))
    if not _trusted(address, networks):
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

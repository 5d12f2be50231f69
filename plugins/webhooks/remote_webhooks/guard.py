"""The SSRF guard: a webhook must not become a way into the server's own network.

The check runs where the connection is made, on the addresses the name resolves to,
and the connection goes to the address checked (never to the name again): a DNS
answer that changes between a check and a connect, or a name that points at
``127.0.0.1``, gets nowhere. Only global unicast addresses pass, unless an address or
network is allowed by the ``allow_addresses`` option.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable, Sequence
from typing import Any

import anyio
import httpcore

from .config import Network

__all__ = ["AddressPolicy", "GuardedBackend", "TargetRefused"]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class TargetRefused(Exception):
    """The target's address (or name) is not one a webhook may reach."""


class AddressPolicy:
    """Which resolved addresses a webhook may connect to."""

    def __init__(self, allowed: Sequence[Network] = ()) -> None:
        self._allowed = tuple(allowed)

    def permits(self, address: Address) -> bool:
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
        if any(address.version == net.version and address in net for net in self._allowed):
            return True
        return address.is_global and not address.is_multicast

    def check(self, host: str, addresses: Iterable[Address]) -> list[Address]:
        """The addresses to try, in order; :class:`TargetRefused` when any is forbidden
        (a name answering with one private address among public ones is not trusted)."""
        found = list(dict.fromkeys(addresses))
        if not found:
            raise TargetRefused(f"{host} resolves to no address")
        forbidden = [str(a) for a in found if not self.permits(a)]
        if forbidden:
            raise TargetRefused(
                f"{host} resolves to {', '.join(forbidden)}, which is not a global address "
                "(loopback, private, link-local or reserved); allow it with the webhooks "
                "option allow_addresses if it is meant")
        return found


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend, resolving and checking every name before connecting."""

    def __init__(self, policy: AddressPolicy) -> None:
        self._policy = policy
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(self, host: str, port: int,
                          timeout: float | None = None,  # noqa: ASYNC109  # httpcore's signature
                          local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None
                          ) -> httpcore.AsyncNetworkStream:
        with anyio.fail_after(timeout):
            try:
                infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except OSError as exc:
                raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from None
        # A scoped IPv6 address ("fe80::1%eth0") is link-local: checked without its scope.
        addresses = self._policy.check(host, (ipaddress.ip_address(str(info[4][0])
                                                                   .split("%")[0])
                                              for info in infos))
        error: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(str(address), port, timeout=timeout,
                                                     local_address=local_address,
                                                     socket_options=socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                error = exc
        assert error is not None
        raise error

    async def connect_unix_socket(self, path: str,
                                  timeout: float | None = None,  # noqa: ASYNC109
                                  socket_options: Iterable[Any] | None = None
                                  ) -> httpcore.AsyncNetworkStream:
        raise TargetRefused("webhooks reach receivers over TCP only")

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)

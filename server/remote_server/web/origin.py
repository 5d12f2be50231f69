"""Which pages may open ``/ws/viewer``: the ``Origin`` check of CONTRACT 1.

By default a page from the server's own host is accepted, whatever scheme
the server itself saw: behind a TLS terminator the server speaks plain HTTP
(uvicorn runs with ``proxy_headers=False``), while the browser's page is
``https://<Host>``, so comparing schemes refused every console served
through one. The host and port the browser used reach the server in the
``Host`` header through a plain TCP terminator and through a proxy that
passes it on. ``REMOTE_SUPPORT_PUBLIC_ORIGINS``, when set, is the exact list
instead, for consoles served from elsewhere.

``Host`` is chosen by whoever names the server, so by default it must also
name *this* server: the listening address, a loopback name, the machine's
own name when listening on every interface, or an IP address. Otherwise a
DNS-rebinding page (``attacker.example`` resolved to this server's address)
would have an origin equal to its own ``Host`` and pass. An IP address can
be trusted as it stands because a page at an address involved no name to
rebind. Any port is accepted: a terminator listens on its own.

A refused origin is logged once, naming the origin and the setting, because
the browser itself cannot tell its user why (a refused WebSocket upgrade
reads as close code 1006); ``POST /api/viewer-origin`` gives a page the same
decision in a form it can read.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Final
from urllib.parse import urlsplit

from remote_core.logsafe import peer_text

from ..settings import ServerSettings
from .logonce import Once

__all__ = ["PUBLIC_ORIGINS_SETTING", "accepted_origins_text", "check_origin", "origin_allowed",
           "own_host_names", "same_host"]

log = logging.getLogger(__name__)

PUBLIC_ORIGINS_SETTING: Final = "REMOTE_SUPPORT_PUBLIC_ORIGINS"
DEFAULT_PORTS = {"http": 80, "https": 443}
LOOPBACK_NAMES: Final = frozenset({"localhost"})
WILDCARDS: Final = frozenset({"", "0.0.0.0", "::"})  # noqa: S104 (names, not a bind)
MAX_SHOWN = 200  # characters of a client-chosen header that reach the log

_refused = Once(limit=100)
_too_many = Once(limit=1)


def _plain(parts: Any) -> bool:
    """Nothing but scheme, host and port (an origin or a Host header has no more)."""
    return not (parts.username or parts.password or parts.path or parts.query or parts.fragment)


def same_host(origin: str, host: str) -> bool:
    """``origin`` names the host and port of ``host`` (a ``Host`` header), http or https.

    A missing port is the origin scheme's default on both sides, so
    ``https://example.com`` matches ``example.com`` and ``example.com:443``.
    """
    try:
        page = urlsplit(origin.strip().rstrip("/"))
        scheme = page.scheme.lower()
        if scheme not in DEFAULT_PORTS or not page.hostname or not _plain(page):
            return False
        server = urlsplit("//" + host.strip())
        if not server.hostname or not _plain(server):
            return False
        default = DEFAULT_PORTS[scheme]
        return (page.hostname == server.hostname
                and (page.port or default) == (server.port or default))
    except ValueError:  # a port that is not a number
        return False


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


@lru_cache(maxsize=8)  # the machine's names are looked up once, not per upgrade
def own_host_names(listen_host: str) -> frozenset[str]:
    """The names (not addresses) a browser may use for this server by default.

    The listening host itself when it is a name, ``localhost``, and, when the
    server listens on every interface, the machine's own host name and FQDN.
    """
    names = {listen_host.strip("[]").lower()} | LOOPBACK_NAMES
    if listen_host.strip("[]") in WILDCARDS:
        names |= {socket.gethostname().lower(), socket.getfqdn().lower()}
    return frozenset(n for n in names if n and not _is_address(n))


def names_this_server(host: str, settings: ServerSettings) -> bool:
    """``host`` (a ``Host`` header) is an IP address or one of :func:`own_host_names`."""
    try:
        name = urlsplit("//" + host.strip()).hostname
    except ValueError:
        return False
    if not name:
        return False
    return _is_address(name) or name in own_host_names(settings.host)


def accepted_origins_text(settings: ServerSettings) -> str:
    """What start-up says the viewer socket accepts (so an operator knows what to set)."""
    if settings.public_origins:
        return ", ".join(settings.public_origins)
    names = ", ".join(sorted(own_host_names(settings.host)))
    return (f"pages from this server's own host, http or https, named by an IP address or "
            f"as {names} (set {PUBLIC_ORIGINS_SETTING} to the console's origins when it is "
            f"reached by another name)")


def _headers(scope: Mapping[str, Any]) -> dict[str, str]:
    return {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}


def origin_allowed(origin: str, scope: Mapping[str, Any], settings: ServerSettings) -> bool:
    """The configured public origins, else a page from the server's own host (any scheme)."""
    if settings.public_origins:
        wanted = origin.strip().rstrip("/").lower()
        return wanted in {o.strip().rstrip("/").lower() for o in settings.public_origins}
    host = _headers(scope).get("host", "")
    return same_host(origin, host) and names_this_server(host, settings)


def check_origin(origin: str | None, scope: Mapping[str, Any], settings: ServerSettings) -> bool:
    """The viewer socket's decision for a request's ``Origin`` (absent: not a browser,
    allowed); a refusal is logged as a warning the first time that origin is seen."""
    if origin is None or origin_allowed(origin, scope, settings):
        return True
    _warn_refused(origin, _headers(scope).get("host", ""), settings)
    return False


def _warn_refused(origin: str, host: str, settings: ServerSettings) -> None:
    shown, shown_host = peer_text(origin, MAX_SHOWN), peer_text(host, MAX_SHOWN)
    if _refused.first(origin.strip().rstrip("/").lower()[:MAX_SHOWN]):
        if settings.public_origins:
            why = f"it is not one of {PUBLIC_ORIGINS_SETTING} {list(settings.public_origins)}"
        else:
            why = (f"it is not the server's own host (Host {shown_host}; by default an IP "
                   f"address or one of {sorted(own_host_names(settings.host))}) and "
                   f"{PUBLIC_ORIGINS_SETTING} is not set")
        log.warning("viewer socket refused for origin %s: %s; if the console is served from "
                    "there, add that origin to %s", shown, why, PUBLIC_ORIGINS_SETTING,
                    extra={"event": "origin_refused", "origin": origin[:MAX_SHOWN]})
    elif _refused.full and _too_many.first("full"):
        log.warning("more than %d different origins were refused on the viewer socket; "
                    "further ones are not logged (see %s)", _refused.limit,
                    PUBLIC_ORIGINS_SETTING)

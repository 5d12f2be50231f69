"""The one way clients of this project verify a server: the system's roots plus a bundle.

Agents and the Python viewer take a ``ca_bundle`` setting (a PEM file of
authorities, such as a company's own CA). It adds to the system's roots rather
than replacing them, so one agent reaches a server certified by a private
authority and a release host certified by a public one. Verification of the
chain and the host name is always on: there is no setting that turns it off.
"""

from __future__ import annotations

import ssl

from .errors import ConfigError

__all__ = ["client_context"]


def client_context(ca_bundle: str = "") -> ssl.SSLContext:
    """A verifying client context: the system's roots plus ``ca_bundle``'s authorities.

    :raises ConfigError: ``ca_bundle`` is missing or holds no usable certificate.
    """
    context = ssl.create_default_context()
    if ca_bundle:
        try:
            context.load_verify_locations(cafile=ca_bundle)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"ca_bundle {ca_bundle} cannot be used: "
                              f"{getattr(exc, 'strerror', None) or exc}") from None
    return context

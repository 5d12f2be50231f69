"""The servers the single sign-on tests run: ``remote-support serve`` configured through
its ``REMOTE_SUPPORT_OIDC_*`` variables as the README shows, registered at the test
provider with its exact callback address."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from remote_server.testing.oidc_provider import OpenIdProvider
from remote_server.testing.processes import ServerProcess

__all__ = ["USERS", "Sso", "start_server"]

USERS = [
    {"sub": "alice", "preferred_username": "alice", "groups": ["techs", "acme-support"]},
    {"sub": "bob", "preferred_username": "bob", "groups": ["techs"]},
    {"sub": "carol", "preferred_username": "carol", "groups": ["marketing"]},
    {"sub": "dave", "preferred_username": "dave", "groups": ["ops-admins"]},
    {"sub": "erin", "preferred_username": "erin", "groups": ["techs", "acme-support"]},
    # A technician at the provider whose name is the local break-glass admin's.
    {"sub": "mallory", "preferred_username": "admin", "groups": ["techs"]},
    # Technicians of the tenants the groups name: one tenant, and two at once.
    {"sub": "frank", "preferred_username": "frank", "groups": ["techs", "globex-staff"]},
    {"sub": "grace", "preferred_username": "grace",
     "groups": ["techs", "globex-staff", "initech-staff"]},
]
GROUP_ROLES = "ops-admins=admin,techs=technician,acme-support=technician"
GROUP_PERMISSIONS = "techs=view,techs=control"
GROUP_CLIENT_ACCESS = "acme-support=acme"
GROUP_TENANTS = "globex-staff=Globex,initech-staff=Initech"


@dataclass
class Sso:
    server: ServerProcess
    client_secret: str


def start_server(workdir: Path, provider: OpenIdProvider, *, create_users: bool) -> Sso:
    server = ServerProcess(workdir, trusted_proxies="127.0.0.1",
                           oidc_allow_http_loopback="true")
    redirect = f"{server.url}/auth/oidc/callback"
    client_id, secret = provider.register(redirect)
    server.env |= {
        "REMOTE_SUPPORT_OIDC_ISSUER": provider.issuer,
        "REMOTE_SUPPORT_OIDC_CLIENT_ID": client_id,
        "REMOTE_SUPPORT_OIDC_CLIENT_SECRET": secret,
        "REMOTE_SUPPORT_OIDC_REDIRECT_URL": redirect,
        "REMOTE_SUPPORT_OIDC_PROVIDER_NAME": "Test IdP",
        "REMOTE_SUPPORT_OIDC_GROUP_ROLES": GROUP_ROLES,
        "REMOTE_SUPPORT_OIDC_GROUP_PERMISSIONS": GROUP_PERMISSIONS,
        "REMOTE_SUPPORT_OIDC_GROUP_CLIENT_ACCESS": GROUP_CLIENT_ACCESS,
        "REMOTE_SUPPORT_OIDC_GROUP_TENANTS": GROUP_TENANTS,
    }
    if create_users:
        server.env["REMOTE_SUPPORT_OIDC_CREATE_USERS"] = "true"
    server.start()
    return Sso(server, secret)

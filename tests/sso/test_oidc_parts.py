"""Single sign-on's parts alone: its settings, the group mapping, one-time entries, PKCE."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
from pathlib import Path

import pytest
from remote_server.settings import ServerSettings
from remote_server.testing.processes import BIN
from remote_server.web.sso.config import OidcConfig
from remote_server.web.sso.mapping import grant_for
from remote_server.web.sso.pending import OneTime
from remote_server.web.sso.provider import pkce_pair

from remote_core.errors import ConfigError

BASE: dict[str, str] = {
    "REMOTE_SUPPORT_OIDC_ISSUER": "https://idp.example.com/",
    "REMOTE_SUPPORT_OIDC_CLIENT_ID": "remote-support",
    "REMOTE_SUPPORT_OIDC_CLIENT_SECRET": "s3cret-value",
    "REMOTE_SUPPORT_OIDC_REDIRECT_URL": "https://rs.example.com/auth/oidc/callback",
    "REMOTE_SUPPORT_OIDC_GROUP_ROLES": "admins=admin,techs=technician,acme=technician",
    "REMOTE_SUPPORT_OIDC_GROUP_PERMISSIONS": "techs=view,techs=control",
    "REMOTE_SUPPORT_OIDC_GROUP_CLIENT_ACCESS": "acme=acme",
}


def config(**changes: str) -> OidcConfig:
    environ = {**BASE, **{f"REMOTE_SUPPORT_OIDC_{k.upper()}": v for k, v in changes.items()}}
    found = OidcConfig.from_settings(ServerSettings.load(environ=environ))
    assert found is not None
    return found


def test_off_unless_an_issuer_is_set() -> None:
    assert OidcConfig.from_settings(ServerSettings.load(environ={})) is None


def test_the_settings_as_shipped() -> None:
    c = config()
    assert c.issuer == "https://idp.example.com"
    assert c.scopes == ("openid", "profile", "email", "groups")
    assert c.create_users is False
    assert c.console_url == "https://rs.example.com/console/"
    assert "s3cret" not in repr(c)
    assert "s3cret" not in repr(ServerSettings.load(environ=BASE))


@pytest.mark.parametrize(("changes", "words"), [
    ({"issuer": "http://idp.example.com"}, "https://"),
    ({"issuer": "http://127.0.0.1:5556"}, "oidc_allow_http_loopback"),
    ({"issuer": "http://10.0.0.1", "allow_http_loopback": "true"}, "loopback"),
    ({"client_secret": ""}, "oidc_client_secret"),
    ({"group_roles": ""}, "oidc_group_roles"),
    ({"group_roles": "techs=root"}, "admin or technician"),
    ({"group_roles": "techs"}, "group=value"),
    ({"group_permissions": "techs=fly"}, "unknown permission"),
    ({"scopes": "email"}, "openid"),
    ({"create_users": "maybe"}, "true or false"),
])
def test_bad_settings_are_refused_by_name(changes: dict[str, str], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        config(**changes)


def test_http_on_loopback_only_when_allowed() -> None:
    c = config(issuer="http://127.0.0.1:5556", redirect_url="http://127.0.0.1:8080/cb",
               allow_http_loopback="true")
    assert c.issuer == "http://127.0.0.1:5556"


def test_groups_map_to_the_strongest_role_and_the_union_of_grants() -> None:
    c = config()
    assert grant_for(c, ["marketing"]) is None
    assert grant_for(c, []) is None
    admin = grant_for(c, ["techs", "admins"])
    assert admin is not None and admin.role == "admin" and admin.client_access == ("*",)
    tech = grant_for(c, ["techs", "acme", "marketing"])
    assert tech is not None and tech.role == "technician"
    assert tech.permissions == ("view", "control")
    assert tech.client_access == ("acme",)
    assert tech.tenants == frozenset()  # no group names a tenant: the default tenant
    placed = config(group_tenants="acme=Acme Ltd,techs=Acme Ltd,admins=Hooli")
    assert grant_for(placed, ["techs", "acme"]).tenants == frozenset({"Acme Ltd"})  # type: ignore[union-attr]
    assert grant_for(placed, ["techs", "admins"]).tenants == {"Acme Ltd", "Hooli"}  # type: ignore[union-attr]


def test_one_time_entries_are_taken_once_and_expire() -> None:
    now = [100.0]
    box: OneTime[str] = OneTime(60, clock=lambda: now[0])
    key = box.put("a")
    assert box.take(key) == "a"
    assert box.take(key) is None
    late = box.put("b")
    now[0] += 61
    assert box.take(late) is None


def test_pkce_challenge_is_s256_of_the_verifier() -> None:
    verifier, challenge = pkce_pair()
    digest = hashlib.sha256(verifier.encode()).digest()
    assert challenge == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    assert 43 <= len(verifier) <= 128


def test_bad_single_sign_on_settings_stop_the_server_in_one_line(tmp_path: Path) -> None:
    environ = {**os.environ, **BASE, "REMOTE_SUPPORT_OIDC_ISSUER": "http://idp.example.com",
               "REMOTE_SUPPORT_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}",
               "REMOTE_SUPPORT_PORT": "0"}
    done = subprocess.run([str(BIN / "remote-support"), "serve"], env=environ,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "oidc_issuer" in done.stderr and "Traceback" not in done.stderr
    assert "s3cret" not in done.stderr + done.stdout


def test_a_sign_in_proves_a_second_factor_only_when_the_provider_says_so() -> None:
    from remote_server.web.sso.routes import sign_in_methods

    assert sign_in_methods({}) == ["fed"]
    assert sign_in_methods({"amr": ["pwd"]}) == ["fed"]
    assert sign_in_methods({"amr": "mfa"}) == ["fed"]  # not a list: not believed
    assert sign_in_methods({"amr": ["pwd", "otp"]}) == ["fed", "mfa"]
    assert sign_in_methods({"amr": ["hwk"]}) == ["fed", "mfa"]

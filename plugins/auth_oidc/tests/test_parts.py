"""The plugin's parts alone: its options, the group mapping, one-time entries, PKCE."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import pytest
from remote_auth_oidc.config import OidcConfig
from remote_auth_oidc.mapping import grant_for
from remote_auth_oidc.pending import OneTime
from remote_auth_oidc.provider import pkce_pair

from remote_core.errors import ConfigError

BASE: dict[str, Any] = {
    "issuer": "https://idp.example.com/", "client_id": "remote-support",
    "client_secret": "s3cret-value", "redirect_url": "https://rs.example.com/auth/oidc/callback",
    "group_roles": {"admins": "admin", "techs": "technician", "acme": "technician"},
    "group_permissions": {"techs": ["view", "control"]},
    "group_client_access": {"acme": ["acme"]},
}


def config(**changes: Any) -> OidcConfig:
    return OidcConfig.from_options({**BASE, **changes})


def test_the_options_as_shipped() -> None:
    c = config()
    assert c.issuer == "https://idp.example.com"
    assert c.scopes == ("openid", "profile", "email", "groups")
    assert c.create_users is False
    assert c.console_url == "https://rs.example.com/console/"
    assert "s3cret" not in repr(c)


def test_tables_come_from_the_environment_as_json() -> None:
    c = config(group_roles='{"techs": "technician"}', create_users="true",
               scopes="openid email")
    assert c.group_roles == {"techs": "technician"}
    assert c.create_users is True
    assert c.scopes == ("openid", "email")


@pytest.mark.parametrize(("changes", "words"), [
    ({"issuer": "http://idp.example.com"}, "https://"),
    ({"issuer": "http://127.0.0.1:5556"}, "allow_http_loopback"),
    ({"issuer": "http://10.0.0.1", "allow_http_loopback": True}, "loopback"),
    ({"client_secret": ""}, "client_secret"),
    ({"group_roles": {}}, "group_roles"),
    ({"group_roles": {"techs": "root"}}, "admin or technician"),
    ({"group_permissions": {"techs": ["fly"]}}, "unknown permission"),
    ({"scopes": "email"}, "openid"),
    ({"create_users": "maybe"}, "true or false"),
    ({"group_roles": "{not json"}, "JSON object"),
    ({"colour": "blue"}, "unknown option"),
])
def test_bad_options_are_refused_by_name(changes: dict[str, Any], words: str) -> None:
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

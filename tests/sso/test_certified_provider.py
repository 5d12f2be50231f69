"""Single sign-on through a certified OpenID provider (see :mod:`.certified`), in Chromium
under the console's shipped CSP, with nothing switched off: the server serves HTTPS
itself, as does the provider, with certificates of the test's own authority, which the
server (``REMOTE_SUPPORT_OIDC_CA_FILE``) and the browser (its own NSS database) verify;
the provider requires PKCE, checks passwords, and hands the groups out on its userinfo
endpoint only.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from remote_server.testing.processes import ADMIN_PASSWORD
from remote_server.testing.tls_terminator import TestCA, TlsServerProcess

from remote_core.testing.browser import chromium, watched_context

from .certified import CertifiedProvider
from .servers import GROUP_PERMISSIONS, GROUP_ROLES

pytestmark = [pytest.mark.slow, pytest.mark.browser]

ACCOUNTS = [
    {"username": "tess", "password": "tess-at-the-idp-1", "groups": ["techs"],
     "email": "tess@example.test"},
    {"username": "otto", "password": "otto-at-the-idp-1", "groups": ["ops-admins"],
     "email": "otto@example.test"},
    {"username": "mona", "password": "mona-at-the-idp-1", "groups": ["marketing"],
     "email": "mona@example.test"},
]
REFUSED = ("/auth/oidc/callback?code=",)
"""Chromium reports the refusal page's 403 status as a console error: provoked on purpose."""
WRONG_PASSWORD = ("/interaction/",)
"""And the provider's 401 for a wrong password."""


class Deployment:
    def __init__(self, workdir: Path) -> None:
        self.ca = TestCA(workdir / "ca")
        self.server = TlsServerProcess(workdir / "server", self.ca)
        redirect = f"{self.server.url}/auth/oidc/callback"
        self.provider = CertifiedProvider(workdir, self.ca, redirect, ACCOUNTS)
        self.server.env |= {
            "REMOTE_SUPPORT_OIDC_ISSUER": self.provider.issuer,
            "REMOTE_SUPPORT_OIDC_CLIENT_ID": self.provider.client_id,
            "REMOTE_SUPPORT_OIDC_CLIENT_SECRET": self.provider.client_secret,
            "REMOTE_SUPPORT_OIDC_REDIRECT_URL": redirect,
            "REMOTE_SUPPORT_OIDC_CA_FILE": str(self.ca.ca_pem),
            "REMOTE_SUPPORT_OIDC_PROVIDER_NAME": "Help Desk IdP",
            "REMOTE_SUPPORT_OIDC_GROUP_ROLES": GROUP_ROLES,
            "REMOTE_SUPPORT_OIDC_GROUP_PERMISSIONS": GROUP_PERMISSIONS,
            "REMOTE_SUPPORT_OIDC_CREATE_USERS": "true",
        }


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    running = Deployment(tmp_path_factory.mktemp("certified"))
    with running.provider:
        running.server.start()
        try:
            yield running
        finally:
            running.server.stop()


@pytest.fixture(scope="module")
def browser(deployment: Deployment,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Chromium trusting the test authority, and no other, for the provider's pages."""
    pytest.importorskip("playwright.sync_api")
    home = deployment.ca.browser_home(tmp_path_factory.mktemp("chromium-home"))
    with chromium(env={**os.environ, "HOME": str(home)}) as instance:
        yield instance


def _at_the_provider(page: Any, deployment: Deployment, username: str,
                     password: str) -> None:
    page.goto(f"{deployment.server.url}/console/")
    page.click("a.sso-login:has-text('Sign in with Help Desk IdP')")
    page.wait_for_selector("input[name=username]")
    assert page.url.startswith(deployment.provider.issuer + "/interaction/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button:has-text('Sign in')")


def _accounts(deployment: Deployment) -> dict[str, dict[str, Any]]:
    with httpx.Client(base_url=deployment.server.url, verify=deployment.server.verify,
                      timeout=30) as client:
        r = client.post("/api/auth/login", json={"username": "admin",
                                                 "password": ADMIN_PASSWORD})
        r = client.get("/api/users",
                       headers={"Authorization": f"Bearer {r.json()['access_token']}"})
        assert r.status_code == 200, r.text
        return {user["username"]: user for user in r.json()}


@pytest.mark.parametrize(("username", "password", "shown"), [
    ("tess", "tess-at-the-idp-1", "tess · technician"),
    ("otto", "otto-at-the-idp-1", "otto · admin"),
])
def test_a_password_sign_in_lands_in_the_console_with_the_groups_role(
        browser: Any, deployment: Deployment, username: str, password: str,
        shown: str) -> None:
    with watched_context(browser) as context:
        page = context.new_page()
        _at_the_provider(page, deployment, username, password)
        assert page.wait_for_selector("nav .who").inner_text() == shown
        assert page.url.startswith(deployment.server.url + "/console/")
    account = _accounts(deployment)[username]  # created on first sign-in
    assert account["role"] == shown.rsplit(" ", 1)[1]


def test_a_wrong_password_stays_at_the_provider(browser: Any,
                                                deployment: Deployment) -> None:
    with watched_context(browser, allow=WRONG_PASSWORD) as context:
        page = context.new_page()
        _at_the_provider(page, deployment, "tess", "not-her-password")
        assert "Invalid username or password" in page.wait_for_selector(".error").inner_text()
        assert page.url.startswith(deployment.provider.issuer)
        page.fill("input[name=username]", "tess")
        page.fill("input[name=password]", "tess-at-the-idp-1")
        page.click("button:has-text('Sign in')")
        assert page.wait_for_selector("nav .who").inner_text() == "tess · technician"


def test_a_user_in_no_mapped_group_is_refused(browser: Any, deployment: Deployment) -> None:
    with watched_context(browser, allow=REFUSED) as context:
        page = context.new_page()
        _at_the_provider(page, deployment, "mona", "mona-at-the-idp-1")
        reason = page.wait_for_selector("#reason")
        assert "no group allowed to use this console" in reason.inner_text()
    assert "mona" not in _accounts(deployment)

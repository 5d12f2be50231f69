"""Single sign-on in a real Chromium, under the console's shipped CSP: the button on the
login page, the provider's sign-in page, and back in the console with the mapped role;
refusals end on a clear page; the local admin still logs in with a password.

The provider's page links a stylesheet on a CDN, which this machine may not reach: the
browser gets an empty one instead (the provider's look is no part of the test).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from remote_server.testing.liveserver import fresh_ip
from remote_server.testing.oidc_provider import OpenIdProvider
from remote_server.testing.processes import ADMIN_PASSWORD

from remote_core.testing.browser import watched_context

from .servers import Sso, start_server

pytestmark = [pytest.mark.slow, pytest.mark.browser]

REFUSED = ("/auth/oidc/callback?code=",)
"""Chromium reports the refusal page's 403 status as a console error: provoked on purpose."""


@pytest.fixture(scope="module")
def sso(tmp_path_factory: pytest.TempPathFactory, provider: OpenIdProvider) -> Iterator[Sso]:
    running = start_server(tmp_path_factory.mktemp("console"), provider, create_users=False)
    try:
        yield running
    finally:
        running.server.stop()



def _sign_in(browser: Any, sso: Sso, subject: str, **context_options: Any) -> Iterator[Any]:
    with watched_context(browser, extra_http_headers={"X-Forwarded-For": fresh_ip()},
                         **context_options) as context:
        context.route("https://cdn.jsdelivr.net/**",
                      lambda route: route.fulfill(status=200, body="", content_type="text/css"))
        page = context.new_page()
        page.goto(f"{sso.server.url}/console/")
        page.click("a.sso-login:has-text('Sign in with Test IdP')")
        page.wait_for_selector("input[name=sub]")
        page.fill("input[name=sub]", subject)
        page.click("button:has-text('Authorize')")
        yield page


def _admin_creates(sso: Sso, username: str) -> None:
    import httpx

    with httpx.Client(base_url=sso.server.url, headers={"X-Forwarded-For": fresh_ip()},
                      timeout=30) as client:
        r = client.post("/api/auth/login", json={"username": "admin",
                                                 "password": ADMIN_PASSWORD})
        headers = {"Authorization": f"Bearer {r.json()['access_token']}"}
        r = client.post("/api/users", headers=headers,
                        json={"username": username, "password": f"{username}-local-pw-1",
                              "role": "technician", "permissions": ["view"]})
        assert r.status_code == 201, r.text


def test_a_technician_signs_in_and_lands_in_the_console(browser: Any, sso: Sso) -> None:
    _admin_creates(sso, "alice")
    for page in _sign_in(browser, sso, "alice"):
        who = page.wait_for_selector("nav .who")
        assert who.inner_text() == "alice · technician"
        assert "#sso=" not in page.url  # the one-time code is wiped from the address
        page.wait_for_selector("main h1:has-text('Machines')")


def test_a_user_in_no_mapped_group_is_refused(browser: Any, sso: Sso) -> None:
    for page in _sign_in(browser, sso, "carol", allow=REFUSED):
        reason = page.wait_for_selector("#reason")
        assert "no group allowed to use this console" in reason.inner_text()


def test_an_unknown_user_is_refused_when_accounts_are_not_created(browser: Any,
                                                                   sso: Sso) -> None:
    for page in _sign_in(browser, sso, "bob", allow=REFUSED):
        reason = page.wait_for_selector("#reason")
        assert "no account named 'bob'" in reason.inner_text()


def test_the_local_admin_still_logs_in_with_a_password(browser: Any, sso: Sso) -> None:
    with watched_context(browser, extra_http_headers={"X-Forwarded-For": fresh_ip()}) as ctx:
        page = ctx.new_page()
        page.goto(f"{sso.server.url}/console/")
        page.wait_for_selector("a.sso-login")
        page.fill("input[name=username]", "admin")
        page.fill("input[name=password]", ADMIN_PASSWORD)
        page.click("button[type=submit]")
        assert page.wait_for_selector("nav .who").inner_text() == "admin · admin"

"""Tenants in the console, in a real Chromium against a real server under its shipped
headers: a global administrator adds a tenant and its first administrator, who then sees
their own tenant alone and publishes to their own release channel. A module of its own:
its logins count against a login limit of their own (8 a minute from one address)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from remote_server.testing.processes import ADMIN_PASSWORD, ServerProcess

from remote_core.testing.browser import log_in, wait_until, watched_context

pytestmark = [pytest.mark.slow, pytest.mark.browser]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path_factory.mktemp("tenants-console")).start()
    yield process
    process.stop()


def test_a_global_administrator_adds_a_tenant_whose_administrator_sees_it_alone(
        server: ServerProcess, browser: Any) -> None:
    with watched_context(browser) as context:
        page = context.new_page()
        log_in(page, server.url, "admin", ADMIN_PASSWORD)
        page.click("nav >> text=Tenants")
        page.fill("#new-tenant input[name=name]", "Northwind")
        page.click("#new-tenant >> text=Add tenant")
        page.wait_for_selector("main .said >> text=Northwind is added")
        wait_until(lambda: "Northwind" in page.eval_on_selector_all(
            "input.tenant-name", "inputs => inputs.map((i) => i.value)"), what="its row")
        # its first administrator, added on the Users page in that tenant
        page.click("nav >> text=Users")
        page.wait_for_selector("select[name=tenant] >> option:text-is('Northwind')",
                               state="attached")
        page.fill("input[name=username]", "northwind-admin")
        page.fill("input[name=password]", "northwind-password")
        page.select_option("select[name=role]", "admin")
        page.select_option("select[name=tenant]", label="Northwind")
        page.click("form >> text=Add user")
        page.wait_for_selector("tr:has(td:text-is('northwind-admin')) >> td.tenant:text-is("
                               "'Northwind')")
        assert [e.inner_text() for e in page.query_selector_all("main .error")] == [""]
    with watched_context(browser) as context:
        page = context.new_page()
        log_in(page, server.url, "northwind-admin", "northwind-password")
        page.click("nav >> text=Users")
        page.wait_for_selector("td:text-is('northwind-admin')")
        names = {e.inner_text() for e in page.query_selector_all("main tbody tr > td:first-child")}
        assert names == {"northwind-admin"}  # no other tenant's accounts
        nav = page.inner_text("nav")
        assert "Tenants" not in nav and "Webhooks" not in nav
        # their own release channel: a release they add is theirs to delete
        page.click("nav >> text=Releases")
        page.wait_for_selector("main p:has-text('your tenant')")
        page.fill("input[name=version]", "7.7.7")
        page.fill("input[name=download_url]", "https://updates.example/northwind-7.7.7.pyz")
        page.fill("input[name=checksum_sha256]", "cd" * 32)
        page.click("form >> text=Add release")
        page.wait_for_selector("tr:has(td:text-is('7.7.7')) >> button:text-is('Delete')")
        page.click("nav >> text=Machines")
        page.wait_for_selector("main h1:has-text('Machines')")
        assert [e.inner_text() for e in page.query_selector_all("main .error")] == [""]

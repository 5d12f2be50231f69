"""The console's Webhooks page in a real Chromium, under the shipped CSP, against
``remote-support serve`` started as the README starts it.

One target on a private address: every delivery to it is refused by the guard
and logged, which the page shows among the failures. A failed login, counted with
a threshold of one, is the event.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from remote_server.testing.processes import ADMIN_PASSWORD, ServerProcess

from remote_core.testing.browser import wait_until, watched_context

pytestmark = [pytest.mark.slow, pytest.mark.browser]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path_factory.mktemp("webhooks-console"))
    process.env |= {
        "REMOTE_SUPPORT_PLUGIN_WEBHOOKS_TARGET_SIEM_URL": "https://10.20.30.40/hook",
        "REMOTE_SUPPORT_PLUGIN_WEBHOOKS_TARGET_SIEM_SECRET": "siem-secret-0123456789",
        "REMOTE_SUPPORT_PLUGIN_WEBHOOKS_LOGIN_FAILURE_THRESHOLD": "1",
    }
    process.start()
    yield process
    process.stop()



def test_the_webhooks_page_shows_refused_deliveries(server: ServerProcess, browser: Any,
                                                    tmp_path: Path) -> None:
    wrong = httpx.post(f"{server.url}/api/auth/login",
                       json={"username": "admin", "password": "not-the-password"}, timeout=10)
    assert wrong.status_code == 401
    with watched_context(browser) as context:
        page = context.new_page()
        page.goto(f"{server.url}/console/")
        page.fill("input[name=username]", "admin")
        page.fill("input[name=password]", ADMIN_PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_selector("nav .who")
        page.click("nav >> text=Webhooks")
        page.wait_for_selector("main h1:has-text('Webhooks')")
        row = page.wait_for_selector("#webhook-deliveries tr[data-outcome=refused]",
                                     timeout=20_000)
        text = row.inner_text()
        assert "auth.login_failures" in text and "siem" in text and "10.20.30.40" in text
        page.check("#webhook-failed-only")
        wait_until(lambda: page.query_selector_all("#webhook-deliveries tr[data-outcome]")
                   and all(r.get_attribute("data-outcome") != "delivered" for r in
                           page.query_selector_all("#webhook-deliveries tr[data-outcome]")),
                   what="only failures listed")
        assert [e.inner_text() for e in page.query_selector_all("main .error")] == [""]
    assert "siem-secret" not in server.log.read_text(errors="replace")

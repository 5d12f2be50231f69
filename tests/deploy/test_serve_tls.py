"""``remote-support serve`` terminating TLS itself, and its SIGHUP certificate reload.

The server runs with the shipped settings plus ``tls_cert``/``tls_key`` from a
throwaway ``trustme`` authority; the agent trusts it through its ``ca_bundle``,
the Python viewer through ``ca_bundle`` too. Nothing turns verification off.
A reload must swap the certificate for new connections while the session that
is already relaying keeps going on its socket.
"""

from __future__ import annotations

import os
import re
import signal
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from remote_server import __version__
from remote_server.testing.processes import AgentProcess, Api
from remote_server.testing.tls_terminator import TestCA, TlsServerProcess, agent_home
from remote_viewer.client import open_viewer

from remote_core.testing.xvfb import Xvfb, blank_painter, xvfb

pytestmark = pytest.mark.slow

RED, GREEN, BLUE = 0xFF0000, 0x00FF00, 0x0000FF


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> TestCA:
    return TestCA(tmp_path_factory.mktemp("ca"))


@pytest.fixture(scope="module")
def server(ca: TestCA, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsServerProcess]:
    running = TlsServerProcess(tmp_path_factory.mktemp("server"), ca).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def api(server: TlsServerProcess) -> Iterator[Api]:
    client = Api(server)  # over https, verified against the test authority
    yield client
    client.close()


def log_lines(server: TlsServerProcess) -> list[str]:
    return server.log.read_text(errors="replace").splitlines()


def wait_for_line(server: TlsServerProcess, pattern: str, count: int = 1) -> list[str]:
    deadline = time.monotonic() + 20
    while True:
        found = [line for line in log_lines(server) if pattern in line]
        if len(found) >= count:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"no {pattern!r} line ({count}) in the server's log:\n"
                                 + "\n".join(log_lines(server)[-30:]))
        time.sleep(0.05)


# -- start-up output ---------------------------------------------------------------------
def test_start_up_says_what_an_operator_needs_and_nothing_else(server: TlsServerProcess) -> None:
    lines = log_lines(server)
    text = "\n".join(lines)
    assert [line for line in lines if " starting; database: " in line] == [
        next(line for line in lines if f"remote-support {__version__} starting; database: "
             f"sqlite" in line)]
    assert len([line for line in lines if "plugins loaded: " in line]) == 1
    assert "store_sql" in next(line for line in lines if "plugins loaded: " in line)
    listening = [line for line in lines if "listening on " in line]
    assert len(listening) == 1, listening
    assert f"listening on https://127.0.0.1:{server.port} (wss:// for agents" in listening[0]
    # No library chatter at INFO, and never the database's URL.
    assert "alembic" not in text and "Uvicorn running" not in text
    assert "Waiting for application startup" not in text
    assert "server.db" not in text and "sqlite://" not in text


def test_plain_http_is_not_served_on_a_tls_listener(server: TlsServerProcess) -> None:
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"http://127.0.0.1:{server.port}/healthz", timeout=5)


def test_a_client_without_the_authority_is_refused(server: TlsServerProcess) -> None:
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        httpx.get(f"{server.url}/healthz", timeout=5)  # the system's roots only


def test_bad_certificate_settings_end_start_up_with_one_line(
        ca: TestCA, tmp_path: Path) -> None:
    broken = TlsServerProcess(tmp_path / "server", ca)
    broken.env["REMOTE_SUPPORT_TLS_KEY"] = str(ca.ca_pem)  # a certificate, not its key
    with pytest.raises(RuntimeError, match="server exited"):
        broken.start()
    lines = broken.log.read_text().splitlines()
    errors = [line for line in lines if line.startswith("remote-support: error: ")]
    assert len(errors) == 1 and "tls_cert" in errors[0], lines
    assert "Traceback" not in "\n".join(lines)
    assert broken.process is not None and broken.process.returncode == 2


# -- reload on SIGHUP -------------------------------------------------------------------
@pytest.fixture(scope="module")
def display() -> Iterator[Xvfb]:
    with xvfb(640, 480, set_display=False) as running:
        yield running


@pytest.fixture(scope="module")
def agent(server: TlsServerProcess, api: Api, ca: TestCA, display: Xvfb,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, AgentProcess]]:
    agent_id, key = api.machine_with_key()
    home = agent_home(tmp_path_factory.mktemp("agent"), ca)
    running = AgentProcess(home, display.display, "--server", server.url, "--key", key)
    try:
        yield agent_id, running
    finally:
        running.stop()


def top_left(rgb: int) -> object:
    """A check for ``wait_for_image``: the top-left pixel (BGRA) shows ``rgb``."""
    want = (rgb & 0xFF, (rgb >> 8) & 0xFF, rgb >> 16)
    return lambda image: all(abs(int(v) - w) < 48 for v, w in zip(image[5, 5, :3], want,
                                                                   strict=True))


def hup(server: TlsServerProcess) -> None:
    assert server.process is not None
    os.kill(server.process.pid, signal.SIGHUP)


@pytest.mark.xvfb
def test_sighup_swaps_the_certificate_under_a_live_session(
        server: TlsServerProcess, api: Api, ca: TestCA, display: Xvfb,
        agent: tuple[str, AgentProcess]) -> None:
    agent_id, agent_process = agent
    session = api.live_session(agent_id, within=30)
    before = server.presented_certificate()

    async def watch() -> None:
        with blank_painter(display.display) as painter:
            async with open_viewer(server.url, api.viewer_token(session["id"]),
                                   ca_bundle=str(ca.ca_pem)) as viewer:
                painter.fill(0, 0, 64, 64, RED)
                painter.sync()
                await viewer.wait_for_image(top_left(RED), within=30)  # type: ignore[arg-type]

                ca.renew()
                hup(server)
                await anyio.to_thread.run_sync(wait_for_line, server,
                                               "TLS certificate reloaded")

                # The same sockets (agent's and viewer's) still relay.
                painter.fill(0, 0, 64, 64, GREEN)
                painter.sync()
                await viewer.wait_for_image(top_left(GREEN), within=30)  # type: ignore[arg-type]

    anyio.run(watch)
    after = server.presented_certificate()
    assert after != before
    leaf = ca.chain_pem.read_text().split("-----END CERTIFICATE-----")[0]
    assert after == ssl.PEM_cert_to_DER_cert(leaf + "-----END CERTIFICATE-----\n")
    assert api.live_session(agent_id)["id"] == session["id"]  # never dropped
    assert "connection lost" not in agent_process.output()


def test_a_bad_file_on_reload_keeps_the_old_certificate(
        server: TlsServerProcess, api: Api, ca: TestCA) -> None:
    serving = server.presented_certificate()
    ca.key_pem.write_text("not a key\n")
    try:
        hup(server)
        errors = wait_for_line(server, "TLS certificate not reloaded")
        assert len(errors) == 1 and "ERROR" in errors[0], errors
        assert re.search(r"tls_key|tls_cert", errors[0])
        assert "Traceback" not in server.log.read_text()
        assert server.presented_certificate() == serving
        assert api.get("/healthz").status_code == 200
    finally:
        ca.renew()  # usable files again, for whatever runs next


@pytest.mark.postgres
def test_start_up_names_postgresql_without_its_url(tmp_path: Path) -> None:
    """The database's kind, never its URL: the password in it stays out of the log."""
    from remote_server.testing.processes import ServerProcess
    from remote_store_sql.testing import postgres_database

    with postgres_database("startup_log") as database:
        scheme, rest = database.url.split("://", 1)
        password = "startup-log-secret-0123"
        url = f"{scheme}://postgres:{password}@{rest.rsplit('@', 1)[-1]}"
        server = ServerProcess(tmp_path / "server", database_url=url).start()
        server.stop()
        text = server.log.read_text(errors="replace")
    assert "starting; database: postgresql" in text, text
    assert password not in text and rest.rsplit("@", 1)[-1] not in text
    assert f"listening on http://127.0.0.1:{server.port} (ws:// for agents" in text
    assert "alembic" not in text


def test_sighup_without_tls_leaves_the_server_running(tmp_path: Path) -> None:
    """``systemctl reload`` of a plain-HTTP server: a note, not the signal's default death."""
    from remote_server.testing.processes import ServerProcess

    plain = ServerProcess(tmp_path / "server").start()
    try:
        assert plain.process is not None
        os.kill(plain.process.pid, signal.SIGHUP)
        deadline = time.monotonic() + 20
        while "SIGHUP: nothing to reload" not in plain.log.read_text(errors="replace"):
            assert plain.process.poll() is None, plain.log.read_text()
            assert time.monotonic() < deadline, plain.log.read_text()
            time.sleep(0.05)
        assert httpx.get(f"{plain.url}/healthz", timeout=5).status_code == 200
    finally:
        plain.stop()


@pytest.mark.browser
@pytest.mark.xvfb
def test_the_console_and_the_viewer_over_the_servers_own_tls(
        server: TlsServerProcess, api: Api, ca: TestCA, agent: tuple[str, AgentProcess],
        tmp_path: Path) -> None:
    """Chromium trusting the test authority (its own NSS database) and nothing else."""
    pytest.importorskip("playwright.sync_api")
    from remote_server.testing.processes import ADMIN_PASSWORD

    from remote_core.testing.browser import chromium, wait_until, watched_context

    session = api.live_session(agent[0], within=30)
    home = ca.browser_home(tmp_path / "chromium-home")
    with chromium(env={**os.environ, "HOME": str(home)}) as browser, \
            watched_context(browser, viewport={"width": 1280, "height": 800}) as context:
        page = context.new_page()
        page.goto(f"{server.url}/console/")
        page.fill("input[name=username]", "admin")
        page.fill("input[name=password]", ADMIN_PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_selector("nav .who")
        page.goto(f"{server.url}/console/viewer.html?session={session['id']}")
        state = page.locator("#state")
        wait_until(lambda: state.get_attribute("data-state") == "connected", timeout=30,
                   what=lambda: f"the viewer to connect over wss; #state is "
                                f"{state.get_attribute('data-state')}")

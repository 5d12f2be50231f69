"""The join page's API: what validation tells an end user, and the one-file agent download."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from remote_server.cli import main as remote_support
from remote_server.testing.liveserver import (
    ApiClient,
    LiveServer,
    ManualClock,
    assert_problem,
    live_server,
)
from remote_server.web.ratelimit import MemoryRateLimiter

from .conftest import ADMIN_PASSWORD, server_settings

ORGANIZATION = "Example Help Desk"
PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("release") / "remote-agent.pyz"
    assert remote_support(["release", "build", "--version", "1.0.0", "--output",
                           str(target)]) == 0
    return target


@pytest.fixture(scope="module")
def joining(tmp_path_factory: pytest.TempPathFactory, release: Path) -> Iterator[LiveServer]:
    path = tmp_path_factory.mktemp("join-api")
    (path / "ca.pem").write_text(PEM)
    settings = server_settings(path, join_agent_file=str(release),
                               join_server_url="https://support.example.net/",
                               join_ca_bundle=str(path / "ca.pem"),
                               join_organization=ORGANIZATION)
    with live_server(settings, limiter=MemoryRateLimiter(clock=ManualClock())) as live:
        yield live


def _code(server: LiveServer) -> str:
    return str(ApiClient(server).login("admin", ADMIN_PASSWORD).post("/api/codes")
               .json()["code"])


def test_validation_names_the_organization_and_the_agent(joining: LiveServer) -> None:
    r = ApiClient(joining).post("/api/codes/validate", json={"code": _code(joining)})
    assert r.status_code == 200, r.text
    assert r.json()["organization"] == ORGANIZATION and r.json()["agent_available"] is True


def test_the_download_carries_server_code_and_ca(joining: LiveServer, release: Path,
                                                 tmp_path: Path) -> None:
    code = _code(joining)
    r = ApiClient(joining).post("/api/codes/agent", json={"code": code.lower()})
    assert r.status_code == 200, r.text
    assert r.headers["content-disposition"] == f'attachment; filename="remote-support-{code}.pyz"'
    assert r.headers["cache-control"] == "no-store"
    saved = tmp_path / "agent.pyz"
    saved.write_bytes(r.content)
    with zipfile.ZipFile(saved) as archive, zipfile.ZipFile(release) as original:
        assert json.loads(archive.read("attended.json")) == {
            "server": "https://support.example.net", "code": code, "ca_pem": PEM}
        assert sorted(archive.namelist()) == sorted([*original.namelist(), "attended.json"])
        assert archive.testzip() is None


def test_an_unknown_code_gets_nothing(joining: LiveServer) -> None:
    client = ApiClient(joining)
    for code in ("ZZZ-ZZZ-ZZZ", "not a code"):
        r = client.post("/api/codes/agent", json={"code": code})
        assert_problem(r, 404)
        assert r.json()["type"].endswith("/not-found")
        assert ORGANIZATION not in r.text


def test_the_download_counts_towards_the_lockout(joining: LiveServer) -> None:
    good = _code(joining)
    client = ApiClient(joining)
    for _ in range(9):
        assert client.post("/api/codes/validate", json={"code": "ZZZ-ZZZ-ZZZ"}).status_code == 404
    assert client.post("/api/codes/agent", json={"code": "ZZZ-ZZZ-ZZZ"}).status_code == 404
    assert_problem(client.post("/api/codes/agent", json={"code": good}), 429)
    assert_problem(client.post("/api/codes/validate", json={"code": good}), 429)


def test_no_agent_configured(tmp_path: Path) -> None:
    settings = server_settings(tmp_path, join_agent_file=str(tmp_path / "missing.pyz"))
    with live_server(settings, limiter=MemoryRateLimiter(clock=ManualClock())) as live:
        code = _code(live)
        client = ApiClient(live)
        assert client.post("/api/codes/validate",
                           json={"code": code}).json()["agent_available"] is False
        r = client.post("/api/codes/agent", json={"code": code})
        assert_problem(r, 404)
        assert r.json()["type"].endswith("/no-join-agent")


def test_a_release_that_already_carries_a_session_is_refused_clearly(
        tmp_path: Path, release: Path) -> None:
    carrying = tmp_path / "carrying.pyz"
    carrying.write_bytes(release.read_bytes())
    with zipfile.ZipFile(carrying, "a") as archive:
        archive.writestr("attended.json", "{}")
    settings = server_settings(tmp_path, join_agent_file=str(carrying))
    with live_server(settings, limiter=MemoryRateLimiter(clock=ManualClock())) as live:
        r = ApiClient(live).post("/api/codes/agent", json={"code": _code(live)})
        assert_problem(r, 404)
        assert r.json()["type"].endswith("/no-join-agent")

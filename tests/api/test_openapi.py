"""The OpenAPI document covers every route, and the live app keeps to it (schemathesis)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from remote_server.testing.apifuzz import admin_schema
from remote_server.testing.liveserver import ApiClient, LiveServer, fresh_ip, live_server
from remote_server.web.api import ENDPOINTS
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from .conftest import ADMIN_PASSWORD, server_settings

EXAMPLES = 25
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_headers_conformance, response_schema_conformance]


def test_the_document_describes_every_endpoint(anon: ApiClient) -> None:
    r = anon.get("/api/openapi.json")
    assert r.status_code == 200
    document = r.json()
    assert document["openapi"].startswith("3.1")
    for ep in ENDPOINTS:
        operation = document["paths"][ep.path][ep.method.lower()]
        assert str(ep.status) in operation["responses"]
        if ep.access != "public":
            assert "401" in operation["responses"] and operation["security"]
        if ep.access == "admin":
            assert "403" in operation["responses"]
        if ep.body is not None:
            assert "422" in operation["responses"]
    schemas = document["components"]["schemas"]
    assert {"ProblemOut", "MachineOut", "LoginIn", "ReleaseIn"} <= set(schemas)
    assert schemas["LoginIn"]["additionalProperties"] is False


def test_health_and_readiness(anon: ApiClient) -> None:
    assert anon.get("/healthz").json()["status"] == "ok"
    assert anon.get("/readyz").json()["status"] == "ready"


def test_unknown_paths_and_methods_are_problems(anon: ApiClient) -> None:
    r = anon.get("/api/nothing-here")
    assert r.status_code == 404 and r.headers["content-type"] == "application/problem+json"
    r = anon.put("/api/version")
    assert r.status_code == 405 and r.json()["status"] == 405


@pytest.fixture(scope="module")
def fuzzed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    # The shipped limits stay on; each fuzzed request comes from an address of its own
    # (X-Forwarded-For, believed from 127.0.0.1), so the fuzzer explores instead of
    # reading 429s.
    with live_server(server_settings(tmp_path_factory.mktemp("fuzz"))) as live:
        yield live


@pytest.fixture(scope="module")
def api_schema(fuzzed_server: LiveServer) -> Any:
    return admin_schema(fuzzed_server.base_url, ADMIN_PASSWORD)


@pytest.mark.slow
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_the_live_app_keeps_to_its_document(mode: GenerationMode, api_schema: Any,
                                            fuzzed_server: LiveServer) -> None:
    """Every operation, fuzzed: no 5xx, and every status, header and body as documented."""
    failures: list[str] = []
    for result in api_schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy(mode, auth_storage=api_schema.auth))
        @settings(max_examples=EXAMPLES, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck), phases=[Phase.generate])
        def fuzz(case: Any) -> None:
            case.headers = {**(case.headers or {}), "X-Forwarded-For": fresh_ip()}
            case.call_and_validate(base_url=fuzzed_server.base_url, checks=CHECKS)

        try:
            fuzz()
        except Unsatisfiable:
            assert mode is GenerationMode.NEGATIVE, operation.label  # no input to spoil
        except Exception as exc:
            failures.append(f"{operation.label}: {exc}")
    assert not failures, "\n\n".join(failures)

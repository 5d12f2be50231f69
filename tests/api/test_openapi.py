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


def _inline_enums(node: Any, where: str = "") -> list[str]:
    """Places an enum is written out rather than referenced by name."""
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "enum" and where.count("/") > 1:
                found.append(where)
            found += _inline_enums(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _inline_enums(value, f"{where}/{i}")
    return found


def test_enums_are_named_and_shared(anon: ApiClient) -> None:
    document = anon.get("/api/openapi.json").json()
    schemas = document["components"]["schemas"]
    for name in ("Role", "Permission", "MachineStatus", "CodeStatus", "ConsentState",
                 "SessionType", "SessionSource", "EventKind", "ProblemType"):
        assert schemas[name]["type"] == "string" and schemas[name]["enum"], name
    # Only an enum's own schema spells its values out; everything else refers to it.
    assert _inline_enums(document["paths"], "/paths") == []
    assert [w for w in _inline_enums(schemas, "/schemas")
            if w not in {f"/schemas/{n}" for n in schemas}] == []
    me = schemas["MeOut"]["properties"]
    assert me["role"] == {"$ref": "#/components/schemas/Role"}
    assert me["permissions"]["items"] == {"$ref": "#/components/schemas/Permission"}
    assert schemas["UserCreateIn"]["properties"]["role"]["$ref"].endswith("/Role")
    status = next(p for p in document["paths"]["/api/machines"]["get"]["parameters"]
                  if p["name"] == "status")
    assert status["schema"] == {"$ref": "#/components/schemas/MachineStatus"}


def test_answers_are_described_as_sent(anon: ApiClient) -> None:
    """Serialization-mode schemas: every field of an answer is present, null only where
    the server can send null; 204s have no body."""
    document = anon.get("/api/openapi.json").json()
    schemas = document["components"]["schemas"]
    for name in ("TokenOut", "CodeValidOut", "EventOut", "UserOut", "SessionOut",
                 "ReleaseOut", "KeyOut", "CodeOut", "RemovalOut"):
        schema = schemas[name]
        assert set(schema["required"]) == set(schema["properties"]), name
    for name, field in (("UserOut", "created_at"), ("EventOut", "id"),
                        ("EventOut", "created_at"), ("SessionOut", "created_at")):
        assert "anyOf" not in schemas[name]["properties"][field], (name, field)
    assert schemas["SessionOut"]["properties"]["ended_at"]["anyOf"][1] == {"type": "null"}
    assert schemas["SessionOut"]["properties"]["session_type"]["$ref"].endswith(
        "/SessionType")
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            if "204" in operation["responses"]:
                assert "content" not in operation["responses"]["204"], (method, path)


def test_every_status_and_every_list_is_documented(anon: ApiClient) -> None:
    document = anon.get("/api/openapi.json").json()
    lists = {"/api/machines", "/api/sessions", "/api/codes", "/api/users", "/api/releases",
             "/api/machines/{agent_id}/keys", "/api/events", "/api/webhooks/deliveries",
             "/api/machines/{agent_id}/history"}
    for ep in ENDPOINTS:
        operation = document["paths"][ep.path][ep.method.lower()]
        assert operation["description"] and operation["tags"]
        responses = operation["responses"]
        assert {"422", "431"} <= set(responses), ep.path
        if ep.body is not None:
            assert {"400", "408", "413", "415"} <= set(responses), ep.path
        for status, response in responses.items():
            if status >= "400":
                assert "/api/problems/" in response["description"], (ep.path, status)
        names = {p["name"] for p in operation.get("parameters", [])}
        if ep.method == "GET" and ep.path in lists:
            assert {"limit", "cursor"} <= names, ep.path
            assert "Link" in responses["200"]["headers"], ep.path
            assert responses["200"]["content"]["application/json"]["schema"]["type"] == "array"
    codes = document["paths"]["/api/codes"]["post"]["responses"]
    assert "503" in codes and "/api/problems/unavailable" in codes["503"]["description"]
    conflict = document["paths"]["/api/users"]["post"]["responses"]["409"]["description"]
    assert "/api/problems/username-taken" in conflict
    info = document["info"]
    assert "405" in info["description"] and "HEAD" in info["description"]
    assert "307" in info["description"] and info["contact"] and document["servers"]


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

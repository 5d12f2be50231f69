"""Problems a client can switch on: a stable ``type`` URI per kind of error, each described
at its URI, listed in the document and in the README."""

from __future__ import annotations

import ast
from pathlib import Path

from remote_server.testing.liveserver import ApiClient, assert_problem
from remote_server.web.api import schemas as s
from remote_server.web.problem_types import BY_STATUS, PROBLEM_TYPES

from remote_core.records import PERMISSIONS

from .conftest import MakeUser

ROOT = Path(__file__).resolve().parents[2]
SUM = "ab" * 32


def kind(r: object, status: int, slug: str) -> None:
    body = assert_problem(r, status)  # type: ignore[arg-type]
    assert body["type"] == f"/api/problems/{slug}", body
    assert body["title"] == next(p.title for p in PROBLEM_TYPES if p.slug == slug)


def test_each_409_says_which_conflict(admin: ApiClient, make_user: MakeUser) -> None:
    make_user("pt-taken")
    kind(admin.post("/api/users", json={"username": "pt-taken", "password": "x" * 12}),
         409, "username-taken")
    release = {"version": "7.7.7", "download_url": "https://dl.example.com/a",
               "checksum_sha256": SUM}
    assert admin.post("/api/releases", json=release).status_code == 201
    kind(admin.post("/api/releases", json=release), 409, "release-exists")
    agent_id = admin.post("/api/machines", json={}).json()["agent_id"]
    kind(admin.post(f"/api/machines/{agent_id}/update", json={}), 409, "machine-offline")
    me = admin.get("/api/auth/me").json()["id"]
    kind(admin.delete(f"/api/users/{me}"), 409, "self-lockout")
    code = admin.post("/api/codes", json={}).json()["code"]
    assert admin.delete(f"/api/codes/{code}").status_code == 204
    kind(admin.delete(f"/api/codes/{code}"), 409, "code-not-pending")


def test_other_kinds(admin: ApiClient, anon: ApiClient, make_user: MakeUser) -> None:
    kind(anon.get("/api/machines"), 401, "unauthorized")
    kind(anon.post("/api/auth/login", json={"username": "admin", "password": "wrong-one"}),
         401, "bad-credentials")
    plain = make_user("pt-plain")
    kind(plain.get("/api/users"), 403, "forbidden")
    kind(plain.post("/api/auth/change-password", json={
        "current_password": "not-the-password", "new_password": "y" * 12}), 403,
        "wrong-password")
    kind(admin.get("/api/machines/nope"), 404, "not-found")
    kind(anon.get("/api/no-such-path"), 404, "not-found")
    kind(anon.put("/api/version"), 405, "method-not-allowed")
    kind(admin.post("/api/machines", content=b"{", headers={"Content-Type": "application/json"}),
         400, "malformed-body")
    kind(admin.post("/api/machines", content=b"{}", headers={"Content-Type": "text/plain"}),
         415, "unsupported-media-type")
    kind(admin.get("/api/machines", params={"colour": "red"}), 422, "validation-failed")


def test_every_type_describes_itself_at_its_uri(anon: ApiClient) -> None:
    for problem in PROBLEM_TYPES:
        r = anon.get(problem.uri)
        assert r.status_code == 200, problem.uri
        assert r.json() == {"type": problem.uri, "title": problem.title,
                            "status": problem.status, "description": problem.meaning}
    kind(anon.get("/api/problems/no-such-kind"), 404, "not-found")


def test_types_are_listed_in_the_document_and_the_readme(anon: ApiClient) -> None:
    document = anon.get("/api/openapi.json").json()
    listed = document["components"]["schemas"]["ProblemType"]
    assert listed["enum"] == [p.uri for p in PROBLEM_TYPES]
    assert listed["x-enum-varnames"] == [p.name for p in PROBLEM_TYPES]
    readme = (ROOT / "README.md").read_text()
    for problem in PROBLEM_TYPES:
        assert f"`{problem.slug}`" in readme, problem.slug
    assert set(BY_STATUS) <= {p.status for p in PROBLEM_TYPES}


def test_every_audit_kind_the_code_records_is_in_the_enum() -> None:
    """The EventKind schema lists every kind an AuditEvent is made with in the server and
    its plugins (found in the source, so a new kind cannot be left out)."""
    recorded: set[str] = set()
    for root in ("server/remote_server", "plugins"):
        for path in (ROOT / root).rglob("*.py"):
            if "/tests/" in str(path):
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.Call):
                    continue
                name = getattr(node.func, "id", getattr(node.func, "attr", None))
                if name == "AuditEvent":
                    arg = node.args[0] if node.args else next(
                        (k.value for k in node.keywords if k.arg == "kind"), None)
                    recorded |= _strings(arg)
                elif name == "_audit":  # the users module's helper passes its kind on
                    recorded |= {k for a in node.args for k in _strings(a)}
    assert len(recorded) > 30
    assert recorded <= {k.value for k in s.EventKind}, recorded - {k.value for k in s.EventKind}


def _strings(node: ast.AST | None) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.IfExp):
        return _strings(node.body) | _strings(node.orelse)
    return set()


def test_enums_are_the_contracts_own() -> None:
    assert [p.value for p in s.Permission] == list(PERMISSIONS)
    assert {r.value for r in s.Role} == {"admin", "technician"}

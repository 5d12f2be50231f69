"""Tenants over the real API and sockets: global administrators manage them; a tenant's
users see and touch only their tenant's records, through every endpoint of the OpenAPI
document, viewer tokens and WebSocket joins; agents join the tenant of their key or
code; a disabled tenant is shut out at once."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from remote_server.testing.liveserver import LiveServer, eventually, live_server

from .conftest import Admin, Peer, recording_settings
from .test_consent import attended

pytestmark = pytest.mark.anyio

TENANT_ADMIN_PASSWORD = "tenant-admin-password"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(recording_settings(tmp_path_factory.mktemp("tenants"))) as live:
        yield live


@pytest.fixture(scope="module")
def admin(server: LiveServer) -> Admin:
    """The first admin: a global administrator (of the default tenant)."""
    return Admin(server)


def new_tenant(admin: Admin, name: str) -> tuple[dict[str, Any], Admin]:
    """A tenant made by the global administrator, and its first administrator, logged in."""
    tenant = admin.ok("POST", "/api/tenants", 201, json={"name": name})
    username = f"{name.lower()}-admin"
    admin.ok("POST", "/api/users", 201, json={
        "username": username, "password": TENANT_ADMIN_PASSWORD, "role": "admin",
        "tenant_id": tenant["id"]})
    return tenant, Admin(admin.server, username, TENANT_ADMIN_PASSWORD)


async def test_tenants_are_managed_by_global_administrators_alone(admin: Admin) -> None:
    tenant, globex = new_tenant(admin, "Globex")
    assert tenant["name"] == "Globex" and not tenant["disabled"]
    taken = admin.http.post("/api/tenants", json={"name": "Globex"})
    assert (taken.status_code, taken.json()["type"]) == (409, "/api/problems/tenant-name-taken")
    listed = [t["name"] for t in admin.ok("GET", "/api/tenants")]
    assert listed[0] == "default" and "Globex" in listed
    me = globex.ok("GET", "/api/auth/me")
    assert (me["tenant_id"], me["global_admin"], me["role"]) == (tenant["id"], False, "admin")
    assert admin.ok("GET", "/api/auth/me")["global_admin"] is True
    # a tenant's administrator manages their own tenant's accounts, never the tenants
    for method, path, body in (("GET", "/api/tenants", None),
                               ("POST", "/api/tenants", {"name": "Mine"}),
                               ("PATCH", f"/api/tenants/{tenant['id']}", {"name": "Mine"}),
                               ("GET", "/api/webhooks/deliveries", None)):
        assert globex.http.request(method, path, json=body).status_code == 403, path
    default_id = admin.ok("GET", "/api/auth/me")["tenant_id"]
    elsewhere = globex.http.post("/api/users", json={
        "username": "sneaky", "password": "long-enough-password", "tenant_id": default_id})
    assert elsewhere.status_code == 422 and "no such tenant" in elsewhere.text
    own = globex.ok("POST", "/api/users", 201, json={
        "username": "globex-tech", "password": "long-enough-password"})
    assert own["tenant_id"] == tenant["id"]
    assert {u["username"] for u in globex.ok("GET", "/api/users")} == {
        "globex-admin", "globex-tech"}
    # renaming; the default tenant cannot be disabled (it holds the global administrators)
    renamed = admin.ok("PATCH", f"/api/tenants/{tenant['id']}", json={"name": "Globex Inc"})
    assert renamed["name"] == "Globex Inc"
    clash = admin.http.patch(f"/api/tenants/{tenant['id']}", json={"name": "default"})
    assert clash.status_code == 409
    locked = admin.http.patch(f"/api/tenants/{default_id}", json={"disabled": True})
    assert (locked.status_code, locked.json()["type"]) == (409, "/api/problems/self-lockout")
    admin.ok("GET", f"/api/tenants/{uuid.uuid4()}", 404)
    events = admin.ok("GET", "/api/events", params={"limit": 1000})
    assert {"tenant.created", "tenant.updated"} <= {e["kind"] for e in events}


# -- the OpenAPI walk --------------------------------------------------------------------
def resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def minimal(document: dict[str, Any], schema: dict[str, Any]) -> Any:
    """The smallest value a schema accepts, so a request passes validation and reaches
    the question of whose record it names."""
    schema = resolve(document, schema)
    if "anyOf" in schema:
        return minimal(document, schema["anyOf"][0])
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        return {name: minimal(document, schema["properties"][name])
                for name in schema.get("required", ())}
    return {"array": [], "boolean": False, "integer": 1, "number": 1}.get(
        kind, "x" * max(1, schema.get("minLength", 1)))


async def a_tenants_records(admin: Admin, server: LiveServer) -> dict[str, str]:
    """One of each record a tenant holds, made by ``admin``: path parameter -> id."""
    agent_id = admin.machine()
    key_id, key = admin.key(agent_id)
    agent = await Peer.agent(server, key)
    session_id = await agent.accepted()
    viewer = await Peer.viewer(server, admin.viewer_token(session_id))
    await viewer.accepted()

    def recording() -> str | None:
        rows = admin.ok("GET", "/api/recordings", params={"session_id": session_id})
        return rows[0]["id"] if rows else None

    recording_id = await eventually(recording, 10, "the session's recording")
    technician = admin.ok("POST", "/api/users", 201, json={
        "username": f"tech-{uuid.uuid4().hex[:8]}", "password": "long-enough-password"})
    return {"agent_id": agent_id, "key_id": key_id, "session_id": session_id,
            "code": admin.code(), "user_id": technician["id"], "recording_id": recording_id,
            "index": "0"}


OWN_OR_SHARED = {
    "/api/problems/{slug}": "public descriptions of the problem types",
    "/api/releases/{version}": "the default tenant's releases are every tenant's channel "
                               "(a tenant's own: test_each_tenant_has_a_release_channel...)",
    "/api/auth/passkeys/{passkey_id}": "an account's own passkeys: tests/api/"
                                       "test_passkeys.py holds another account's to 404",
}
"""Paths whose records are no tenant's, and why."""


async def test_every_endpoint_hides_another_tenants_records(server: LiveServer,
                                                            admin: Admin) -> None:
    """Walked from the OpenAPI document: every operation that names a record by its id,
    asked by another tenant's administrator (who holds every permission there), answers
    404 as for a record that does not exist; every list they read holds none of them."""
    ours = await a_tenants_records(admin, server)
    _, theirs = new_tenant(admin, "Initech")
    document = admin.ok("GET", "/api/openapi.json")
    own_login = admin.ok("GET", "/api/auth/sessions")[0]["id"]
    walked = []
    for path, operations in document["paths"].items():
        names = re.findall(r"{(\w+)}", path)
        if not names or path in OWN_OR_SHARED:
            continue
        ids = {**ours, "session_id": own_login} if path.startswith("/api/auth/") else ours
        for method, operation in operations.items():
            if "Global administrators only" in operation["description"]:
                continue
            assert set(names) <= set(ids), f"no record for {names} of {method} {path}"
            url = path.format(**ids)
            content = operation.get("requestBody", {}).get("content", {})
            body = (minimal(document, content["application/json"]["schema"])
                    if "application/json" in content else None)
            answer = theirs.http.request(method.upper(), url, json=body)
            assert answer.status_code == 404, f"{method.upper()} {url}: {answer.text}"
            if method == "get" and "index" not in names:  # the record is real
                assert admin.http.get(url).status_code == 200, url
            walked.append(f"{method.upper()} {path}")
    assert len(walked) >= 20, walked
    lists = [p for p, ops in document["paths"].items() if "{" not in p and "get" in ops
             and "Global administrators only" not in ops["get"]["description"]
             and ops["get"].get("security") != []]
    for path in [*lists, "/api/sessions?live=true"]:
        answer = theirs.http.get(path)
        assert answer.status_code == 200, f"{path}: {answer.text}"
        leaked = [name for name, value in ours.items()
                  if len(value) > 8 and value in answer.text]
        assert leaked == [], f"GET {path} shows another tenant's {leaked}"
    # nothing of ours changed under their writes
    assert admin.ok("GET", f"/api/machines/{ours['agent_id']}")["status"] == "online"
    assert admin.ok("GET", f"/api/sessions/{ours['session_id']}")["live"] is True


async def test_a_tenants_agents_sessions_and_viewers_stay_in_it(server: LiveServer,
                                                               admin: Admin) -> None:
    tenant, hooli = new_tenant(admin, "Hooli")
    # a managed agent enrolled with a key of the tenant's machine
    agent_id = hooli.machine("hooli-hq")
    agent = await Peer.agent(server, hooli.key(agent_id)[1])
    session_id = await agent.accepted()
    assert hooli.ok("GET", f"/api/sessions/{session_id}")["live"] is True
    admin.ok("GET", f"/api/sessions/{session_id}", 404)
    admin.ok("POST", f"/api/sessions/{session_id}/viewer-token", 404)
    admin.ok("GET", f"/api/machines/{agent_id}", 404)
    token = hooli.viewer_token(session_id)
    viewer = await Peer.viewer(server, token)
    await viewer.accepted()
    await agent.expect("start_stream")
    own_id, own_key = admin.keyed_machine()
    own = await Peer.agent(server, own_key)
    own_session = await own.accepted()
    # an attended agent joins the tenant of the code its end user reads out
    technician = hooli.technician("view", "control", "support_codes")
    attendee, attended_id, _ = await attended(server, technician)
    assert hooli.ok("GET", f"/api/sessions/{attended_id}")["source"]
    admin.ok("GET", f"/api/sessions/{attended_id}", 404)
    # the audit log is the tenant's own
    logged = {e["session_id"] for e in hooli.ok("GET", "/api/events", params={"limit": 1000})}
    assert {session_id, attended_id} <= logged and own_session not in logged
    assert session_id not in json.dumps(admin.ok("GET", "/api/events",
                                                 params={"limit": 1000}))
    # the tenant's machine list holds its own machines alone
    attendee_machine = hooli.ok("GET", f"/api/sessions/{attended_id}")["agent_id"]
    assert [m["agent_id"] for m in hooli.ok("GET", "/api/machines")] == [
        agent_id, attendee_machine]
    assert attendee_machine not in {m["agent_id"] for m in admin.ok(
        "GET", "/api/machines", params={"limit": 1000})}
    assert own_id in {m["agent_id"] for m in admin.ok(
        "GET", "/api/machines", params={"limit": 1000})}
    for peer in (viewer, agent, own, attendee):
        await peer.close()
    assert tenant["id"] == hooli.ok("GET", "/api/auth/me")["tenant_id"]


async def test_a_machine_another_tenant_knows_becomes_a_machine_of_its_own(
        server: LiveServer, admin: Admin) -> None:
    """The same computer helped by two tenants (one claimed agent id): neither tenant's
    session lands on the other's machine."""
    _, umbrella = new_tenant(admin, "Umbrella")
    claimed = f"pc-{uuid.uuid4().hex[:8]}"
    first = await Peer.agent(server, admin.code(), agent_id=claimed)
    first_session = await first.accepted()
    await first.close()
    second = await Peer.agent(server, umbrella.code(), agent_id=claimed)
    second_session = await second.accepted()
    theirs = umbrella.ok("GET", f"/api/sessions/{second_session}")["agent_id"]
    assert theirs != claimed
    assert admin.ok("GET", f"/api/sessions/{first_session}")["agent_id"] == claimed
    umbrella.ok("GET", f"/api/machines/{claimed}", 404)
    await second.close()


async def test_a_disabled_tenant_is_shut_out_at_once(server: LiveServer, admin: Admin) -> None:
    tenant, acme = new_tenant(admin, "Acme")
    agent_id, key = acme.keyed_machine()
    agent = await Peer.agent(server, key)
    session_id = await agent.accepted()
    viewer = await Peer.viewer(server, acme.viewer_token(session_id))
    await viewer.accepted()
    admin.ok("PATCH", f"/api/tenants/{tenant['id']}", json={"disabled": True})
    # the administrator's token stops, their viewer closes, the agent is disconnected
    assert acme.http.get("/api/machines").status_code == 401
    code, _ = await viewer.closed()
    assert code == 1008
    await agent.closed()
    again = await Peer.agent(server, key)
    refused = await again.response()
    assert not refused.success and "tenant is disabled" in refused.error
    login = acme.http.post("/api/auth/login", json={"username": "acme-admin",
                                                    "password": TENANT_ADMIN_PASSWORD})
    assert login.status_code == 401 and "tenant is disabled" in login.text
    # enabled again: its users log in and its agents connect
    admin.ok("PATCH", f"/api/tenants/{tenant['id']}", json={"disabled": False})
    back = Admin(server, "acme-admin", TENANT_ADMIN_PASSWORD)
    agent = await Peer.agent(server, key)
    assert await agent.accepted()
    assert back.ok("GET", f"/api/machines/{agent_id}")["status"] == "online"
    await agent.close()



def release(version: str) -> dict[str, Any]:
    return {"version": version, "download_url": f"https://updates.example/{version}.pyz",
            "checksum_sha256": "c" * 64}


async def test_each_tenant_has_a_release_channel_beside_the_whole_servers(
        server: LiveServer, admin: Admin) -> None:
    """The default tenant's releases are every tenant's; a tenant's own are its machines'
    alone, and an agent's poll names its channel with its key."""
    _, wayne = new_tenant(admin, "Wayne")
    admin.ok("POST", "/api/releases", 201, json=release("3.1.0"))
    wayne.ok("POST", "/api/releases", 201, json=release("3.2.0-wayne.1"))
    assert {r["version"] for r in wayne.ok("GET", "/api/releases")} >= {"3.1.0",
                                                                         "3.2.0-wayne.1"}
    assert "3.2.0-wayne.1" not in {r["version"] for r in admin.ok("GET", "/api/releases")}
    admin.ok("GET", "/api/releases/3.2.0-wayne.1", 404)
    # the whole server's releases are the global administrators' to change
    whole = wayne.http.patch("/api/releases/3.1.0", json={"notes": "mine now"})
    assert whole.status_code == 403 and "whole server" in whole.text
    assert wayne.http.delete("/api/releases/3.1.0").status_code == 403
    # the poll: no credential reads the whole server's channel, a key its tenant's too
    theirs = wayne.key(wayne.machine())[1]
    ours = admin.key(admin.machine())[1]
    poll = admin.http.get("/api/version", headers={"Authorization": ""})
    assert poll.json()["version"] == "3.1.0"
    for key, newest in ((theirs, "3.2.0-wayne.1"), (ours, "3.1.0")):
        poll = admin.http.get("/api/version", headers={"Authorization": f"Bearer {key}"})
        assert poll.json()["version"] == newest, poll.text
    assert wayne.ok("GET", "/api/version")["version"] == "3.2.0-wayne.1"  # login token
    for bad in ("Bearer cak_no-such-key", "Bearer ABC-DEF-GHJ", "Basic eDp5",
                "Bearer eyJhbGciOiJIUzI1NiJ9.e30.c2ln"):
        assert admin.http.get("/api/version", headers={"Authorization": bad}
                              ).status_code == 401, bad
    # an update push names a release of the machine's channel, never another tenant's
    agent_id = admin.machine()
    agent = await Peer.agent(server, admin.key(agent_id)[1])
    await agent.accepted()
    refused = admin.http.post(f"/api/machines/{agent_id}/update",
                              json={"version": "3.2.0-wayne.1"})
    assert refused.status_code == 404 and "no such release" in refused.text
    wayne.ok("DELETE", "/api/releases/3.2.0-wayne.1", 204)
    await agent.close()

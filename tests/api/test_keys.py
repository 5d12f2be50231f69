"""Agent keys: the plain key once, hashes never, revocation (SPEC 4, 5.2)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import anyio
from remote_server.testing.liveserver import ApiClient, assert_problem, live_server

from .conftest import ADMIN_PASSWORD, server_settings


def test_issue_list_and_revoke(admin: ApiClient) -> None:
    agent_id = admin.post("/api/machines", json={}).json()["agent_id"]
    keys = f"/api/machines/{agent_id}/keys"
    r = admin.post(keys, json={"label": "laptop"})
    assert r.status_code == 201, r.text
    issued = r.json()
    plain = issued["key"]
    assert plain.startswith("cak_") and len(plain) >= 4 + 43
    stored = anyio.run(admin.server.ctx.store.find_agent_key,
                       hashlib.sha256(plain.encode()).hexdigest())
    assert stored is not None and stored.id == issued["id"], "only the SHA-256 is stored"
    listed = admin.get(keys).json()
    assert [k["id"] for k in listed] == [issued["id"]]
    assert plain not in admin.get(keys).text and stored.key_hash not in admin.get(keys).text
    assert "key" not in listed[0] and "key_hash" not in listed[0]
    assert admin.delete(f"{keys}/{issued['id']}").status_code == 204
    assert admin.get(keys).json()[0]["revoked_at"] is not None
    assert anyio.run(admin.server.ctx.store.find_agent_key, stored.key_hash) is None
    assert_problem(admin.delete(f"{keys}/no-such-key"), 404)
    kinds = [e["kind"] for e in admin.get("/api/events", params={"agent_id": agent_id}).json()]
    assert {"agent_key.issued", "agent_key.revoked"} <= set(kinds)


def test_keys_of_an_unknown_machine_are_404(admin: ApiClient) -> None:
    assert_problem(admin.post("/api/machines/nope/keys", json={}), 404)
    assert_problem(admin.get("/api/machines/nope/keys"), 404)


def test_without_a_key_issuing_method_issuing_is_a_clear_501(tmp_path: Path) -> None:
    # A deployment that blocks auth_agentkey (to replace it, say) is never handed a
    # key that no loaded method would accept.
    settings = server_settings(tmp_path, block_plugins=("auth_agentkey",))
    with live_server(settings) as server:
        admin = ApiClient(server).login("admin", ADMIN_PASSWORD)
        agent_id = admin.post("/api/machines", json={}).json()["agent_id"]
        r = admin.post(f"/api/machines/{agent_id}/keys", json={"label": "laptop"})
        assert_problem(r, 501, "issues agent keys")
        assert "supportcode" in r.json()["detail"]
        assert admin.get(f"/api/machines/{agent_id}/keys").json() == []
        kinds = {e["kind"] for e in admin.get("/api/events", params={"agent_id": agent_id}).json()}
        assert "agent_key.issued" not in kinds

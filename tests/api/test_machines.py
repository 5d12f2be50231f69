"""Machines: listing and filters, pre-registration, edits, history and removal (SPEC 3.3)."""

from __future__ import annotations

import anyio
from remote_server.testing.liveserver import ApiClient, assert_problem
from remote_server.web.api.schemas import MachineOut

from remote_core.records import MachineReport


def _machine(admin: ApiClient, **fields: object) -> str:
    r = admin.post("/api/machines", json=fields)
    assert r.status_code == 201, r.text
    return str(r.json()["agent_id"])


def _report(admin: ApiClient, report: MachineReport) -> None:
    """What an agent's registration writes (the relay's path), straight into the store."""
    anyio.run(admin.server.ctx.store.upsert_machine, report)


def test_preregister_get_and_patch(admin: ApiClient) -> None:
    r = admin.post("/api/machines", json={"organization": "acme", "site": "hq",
                                          "tags": ["lab", "linux"]})
    assert r.status_code == 201
    machine = r.json()
    assert machine["status"] == "offline" and machine["session_id"] is None
    assert machine["tags"] == ["lab", "linux"]
    one = f"/api/machines/{machine['agent_id']}"
    assert admin.get(one).json() == machine
    r = admin.patch(one, json={"site": "branch", "tags": []})
    assert r.status_code == 200
    assert (r.json()["site"], r.json()["tags"], r.json()["organization"]) == ("branch", [], "acme")
    assert_problem(admin.patch(one, json={"tags": "lab"}), 422, "tags")
    assert_problem(admin.get("/api/machines/no-such-machine"), 404)


def test_an_optional_body_is_none_or_json(admin: ApiClient) -> None:
    # No body pre-registers with nothing assigned; white space alone is a body
    # that is not JSON, and creates nothing.
    assert admin.post("/api/machines").status_code == 201
    before = len(admin.get("/api/machines", params={"limit": 1000}).json())
    for junk in (b"\n", b"  ", b"\r\n\t"):
        r = admin.post("/api/machines", content=junk, headers={"Content-Type": "application/json"})
        assert_problem(r, 400, "not valid JSON")
    assert len(admin.get("/api/machines", params={"limit": 1000}).json()) == before


def test_list_filters(admin: ApiClient) -> None:
    a = _machine(admin, organization="filt-org", site="s1", tags=["red"])
    b = _machine(admin, organization="filt-org", site="s2", tags=["blue"])
    _report(admin, MachineReport(agent_id=b, hostname="blue-box-7"))

    def ids(**params: str) -> set[str]:
        r = admin.get("/api/machines", params=params)
        assert r.status_code == 200, r.text
        return {m["agent_id"] for m in r.json()}

    assert ids(organization="filt-org") == {a, b}
    assert ids(organization="filt-org", site="s1") == {a}
    assert ids(organization="filt-org", tag="blue") == {b}
    assert ids(q="blue-box") == {b}
    assert a in ids(status="offline") and not ids(organization="filt-org", status="online")
    assert len(admin.get("/api/machines", params={"limit": 1}).json()) == 1
    for body in admin.get("/api/machines").json():  # rendered without a model: same shape
        MachineOut.model_validate(body)
    assert_problem(admin.get("/api/machines", params={"status": "asleep"}), 422, "status")
    assert_problem(admin.get("/api/machines", params={"limit": "many"}), 422, "limit")


def test_purge_soft_deletes_and_hard_delete_removes(admin: ApiClient) -> None:
    store = admin.server.ctx.store
    soft = _machine(admin)
    hard = _machine(admin)
    r = admin.delete(f"/api/machines/{soft}", params={"purge": "true"})
    assert r.status_code == 200 and r.json()["action"] == "purged"
    r = admin.delete(f"/api/machines/{hard}")
    assert r.status_code == 200 and r.json()["action"] == "deleted"
    for agent_id in (soft, hard):
        assert_problem(admin.get(f"/api/machines/{agent_id}"), 404)
        assert agent_id not in {m["agent_id"] for m in admin.get("/api/machines").json()}
    kept = anyio.run(store.get_machine_by_id, soft)
    assert kept is not None and kept.deleted_at is not None, "purge keeps the row"
    assert anyio.run(store.get_machine_by_id, hard) is None, "no purge deletes the row"
    _report(admin, MachineReport(agent_id=soft, hostname="back"))
    assert admin.get(f"/api/machines/{soft}").status_code == 200, "a reconnect revives it"
    assert_problem(admin.delete(f"/api/machines/{hard}"), 404)


def test_export_returns_the_history_before_deleting(admin: ApiClient) -> None:
    agent_id = _machine(admin, organization="exp")
    admin.post(f"/api/machines/{agent_id}/keys", json={"label": "k"})
    history = admin.get(f"/api/machines/{agent_id}/history").json()
    assert all(entry["type"] == "event" for entry in history)
    assert [entry["event"]["kind"] for entry in history] == [
        "agent_key.issued", "machine.preregistered"]
    assert all(entry["event"]["agent_id"] == agent_id for entry in history)
    r = admin.delete(f"/api/machines/{agent_id}", params={"export": "true"})
    assert r.status_code == 200
    assert r.json()["history"] == history and r.json()["history_truncated"] is False


def test_removal_is_audited_with_actor_target_and_client_ip(admin: ApiClient) -> None:
    agent_id = _machine(admin)
    admin.delete(f"/api/machines/{agent_id}", params={"purge": True})
    events = admin.get("/api/events", params={"agent_id": agent_id}).json()
    purged = [e for e in events if e["kind"] == "machine.purged"]
    assert purged and purged[0]["actor"] == "admin" and purged[0]["target"] == agent_id
    assert purged[0]["client_ip"] == admin.ip


def test_bulk_removal_of_500_and_not_501(admin: ApiClient) -> None:
    ids = [_machine(admin, organization="bulk") for _ in range(500)]
    r = admin.post("/api/machines/bulk-remove", json={"agent_ids": [*ids, "extra-one"]})
    assert_problem(r, 422, "agent_ids")
    listed = admin.get("/api/machines", params={"organization": "bulk", "limit": 1000})
    assert len(listed.json()) == 500 and "link" not in listed.headers
    r = admin.post("/api/machines/bulk-remove",
                   json={"agent_ids": [*ids[:499], "never-was"], "purge": True})
    assert r.status_code == 200, r.text
    assert sorted(r.json()["removed"]) == sorted(ids[:499])
    assert r.json()["not_found"] == ["never-was"]
    left = admin.get("/api/machines", params={"organization": "bulk"}).json()
    assert [m["agent_id"] for m in left] == [ids[499]]
    events = admin.get("/api/events", params={"limit": 1000}).json()
    audited = {e["target"] for e in events if e["kind"] == "machine.purged"}
    assert set(ids[:499]) <= audited
    assert_problem(admin.post("/api/machines/bulk-remove", json={"agent_ids": []}), 422)

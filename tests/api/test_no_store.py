"""No API answer may be kept by a browser or proxy cache (the security review's "Also" line):
not a list of machines, not a problem, and above all not the one showing a new ``cak_`` key."""

from __future__ import annotations

from remote_server.testing.liveserver import ApiClient


def test_every_kind_of_api_answer_says_no_store(admin: ApiClient, anon: ApiClient) -> None:
    machine = admin.post("/api/machines", json={"organization": "acme"})
    key = admin.post(f"/api/machines/{machine.json()['agent_id']}/keys", json={})
    assert key.status_code == 201 and key.json()["key"].startswith("cak_")
    answers = {
        "created machine": machine,
        "new agent key": key,
        "list": admin.get("/api/machines"),
        "no content": admin.delete(f"/api/machines/{machine.json()['agent_id']}/keys/"
                                   f"{key.json()['id']}"),
        "problem": anon.get("/api/machines"),
        "login": anon.post("/api/auth/login", json={"username": "admin", "password": "wrong"}),
    }
    for what, response in answers.items():
        assert response.status_code < 500, (what, response.text)
        assert response.headers.get("cache-control") == "no-store", (what, response.headers)

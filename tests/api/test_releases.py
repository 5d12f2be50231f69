"""Releases, the version poll by semantic version, and update pushes (SPEC 4, 9)."""

from __future__ import annotations

from remote_server.testing.liveserver import ApiClient, assert_problem

from remote_core.semver import semver_key

SUM = "ab" * 32


def _release(version: str, **extra: object) -> dict[str, object]:
    return {"version": version, "download_url": f"https://dl.example.com/agent-{version}",
            "checksum_sha256": SUM, **extra}


def test_semver_precedence() -> None:
    ordered = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
               "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.9.0", "1.10.0",
               "2.0.0"]
    assert sorted(reversed(ordered), key=semver_key) == ordered


def test_release_crud_and_version_poll(admin: ApiClient, tech: ApiClient,
                                       anon: ApiClient) -> None:
    assert_problem(anon.get("/api/version"), 404)
    for version in ("1.9.0", "1.10.0", "1.10.0-rc.1"):
        r = admin.post("/api/releases", json=_release(version))
        assert r.status_code == 201, r.text
    assert_problem(admin.post("/api/releases", json=_release("1.9.0")), 409)
    r = anon.get("/api/version")
    assert r.status_code == 200
    assert r.json() == {"version": "1.10.0", "download_url": "https://dl.example.com/agent-1.10.0",
                        "checksum_sha256": SUM, "mandatory": False}
    # Listed as published, the newest first; /api/version goes by semantic version.
    assert [r["version"] for r in tech.get("/api/releases").json()] == [
        "1.10.0-rc.1", "1.10.0", "1.9.0"]
    r = admin.patch("/api/releases/1.10.0", json={"mandatory": True, "notes": "fixes"})
    assert r.json()["mandatory"] is True and r.json()["notes"] == "fixes"
    assert tech.get("/api/releases/1.10.0").json()["notes"] == "fixes"
    assert admin.delete("/api/releases/1.10.0").status_code == 204
    assert anon.get("/api/version").json()["version"] == "1.10.0-rc.1"
    assert_problem(tech.get("/api/releases/1.10.0"), 404)


def test_release_bodies_are_checked(admin: ApiClient) -> None:
    r = admin.post("/api/releases", json=_release("3.0.0", download_url="http://x.example/a"))
    assert_problem(r, 422, "download_url")
    assert_problem(admin.post("/api/releases", json=_release("3.0.0", checksum_sha256="ab")),
                   422, "checksum_sha256")
    assert_problem(admin.post("/api/releases", json=_release("v3")), 422, "version")


def test_push_needs_a_connected_machine_and_a_release(admin: ApiClient) -> None:
    agent_id = admin.post("/api/machines", json={}).json()["agent_id"]
    admin.post("/api/releases", json=_release("4.0.0"))
    r = admin.post(f"/api/machines/{agent_id}/update", json={})
    assert_problem(r, 409, "not connected")
    assert_problem(admin.post(f"/api/machines/{agent_id}/update", json={"version": "9.9.9"}),
                   404, "release")
    assert_problem(admin.post("/api/machines/nope/update", json={}), 404)

"""User administration, permissions and client access (CONTRACT 2)."""

from __future__ import annotations

from remote_server.testing.liveserver import ApiClient, assert_problem

from .conftest import MakeUser


def test_user_crud(admin: ApiClient) -> None:
    r = admin.post("/api/users", json={"username": "carol", "password": "carol-password",
                                       "permissions": ["view", "control"]})
    assert r.status_code == 201, r.text
    user = r.json()
    assert user["role"] == "technician" and set(user["permissions"]) == {"view", "control"}
    assert "password" not in str(user) and "hash" not in str(user)
    assert_problem(admin.post("/api/users", json={"username": "carol",
                                                  "password": "another-pass"}), 409, "taken")
    listed = admin.get("/api/users").json()
    assert "carol" in {u["username"] for u in listed}
    one = f"/api/users/{user['id']}"
    assert admin.get(one).json()["username"] == "carol"
    r = admin.put(one + "/permissions", json={"permissions": ["support_codes"]})
    assert r.json()["permissions"] == ["support_codes"]
    r = admin.put(one + "/client-access", json={"organizations": ["acme", "globex"]})
    assert set(r.json()["client_access"]) == {"acme", "globex"}
    r = admin.patch(one, json={"role": "admin"})
    assert r.json()["role"] == "admin"
    assert admin.delete(one).status_code == 204
    assert_problem(admin.get(one), 404)
    assert_problem(admin.delete(one), 404)


def test_bodies_name_the_bad_field(admin: ApiClient) -> None:
    r = admin.post("/api/users", json={"username": "dave", "password": "dave-password",
                                       "permissions": ["fly"]})
    assert assert_problem(r, 422, "permissions")["errors"][0]["field"] == "permissions.0"
    r = admin.post("/api/users", json={"username": "dave", "password": "short"})
    assert_problem(r, 422, "password")
    r = admin.post("/api/users", json={"username": "dave", "password": "dave-password",
                                       "shoe_size": 44})
    assert_problem(r, 422, "shoe_size")
    r = admin.post("/api/users", json={"username": ["dave"], "password": "dave-password"})
    assert_problem(r, 422, "username")
    r = admin.post("/api/users", json=["not", "an", "object"])
    assert_problem(r, 422)


def test_an_admin_cannot_lock_themselves_out(admin: ApiClient) -> None:
    me = admin.get("/api/auth/me").json()["id"]
    assert_problem(admin.delete(f"/api/users/{me}"), 409)
    assert_problem(admin.patch(f"/api/users/{me}", json={"disabled": True}), 409)
    assert_problem(admin.patch(f"/api/users/{me}", json={"role": "technician"}), 409)


def test_client_access_limits_what_a_technician_sees(admin: ApiClient,
                                                     make_user: MakeUser) -> None:
    acme = admin.post("/api/machines", json={"organization": "acme-ca"}).json()["agent_id"]
    other = admin.post("/api/machines", json={"organization": "other-ca"}).json()["agent_id"]
    narrow = make_user("narrow", permissions=["view"], client_access=["acme-ca"])
    seen = {m["agent_id"] for m in narrow.get("/api/machines").json()}
    assert acme in seen and other not in seen
    assert narrow.get(f"/api/machines/{acme}").status_code == 200
    assert_problem(narrow.get(f"/api/machines/{other}"), 404)
    assert_problem(narrow.get(f"/api/machines/{other}/history"), 404)
    nothing = make_user("nothing", permissions=["view"])
    assert nothing.get("/api/machines").json() == []
    everyone = make_user("everyone", permissions=["view"], client_access=["*"])
    seen = {m["agent_id"] for m in everyone.get("/api/machines").json()}
    assert {acme, other} <= seen

"""The HTTP edges every client meets: bodies only as JSON (415), HEAD, 405 with Allow, and
trailing-slash redirects whose Location is relative."""

from __future__ import annotations

from remote_server.testing.liveserver import ApiClient, assert_problem


def test_bodies_are_json_or_415(admin: ApiClient) -> None:
    for media_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
                       "application/jsonx"):
        r = admin.post("/api/machines", content=b'{"organization": "m415"}',
                       headers={"Content-Type": media_type})
        assert_problem(r, 415, "application/json")
    r = admin.post("/api/machines", content=b'{"organization": "m415"}', headers={})
    assert_problem(r, 415, "missing")
    for media_type in ("application/json", "application/json; charset=utf-8",
                       "Application/JSON"):
        r = admin.post("/api/machines", content=b'{"organization": "m415"}',
                       headers={"Content-Type": media_type})
        assert r.status_code == 201, (media_type, r.text)
    # An optional body may be left out, with or without a Content-Type.
    assert admin.post("/api/machines").status_code == 201
    assert admin.post("/api/machines", headers={"Content-Type": "text/plain"}).status_code == 415
    listed = admin.get("/api/machines", params={"organization": "m415", "limit": 1000})
    assert len(listed.json()) == 3


def test_trailing_slash_redirects_are_relative(admin: ApiClient, anon: ApiClient) -> None:
    r = admin.get("/api/machines/?limit=2", follow_redirects=False)
    assert r.status_code == 307
    assert r.headers["location"] == "/api/machines?limit=2"
    assert admin.get("/api/machines/?limit=2", follow_redirects=True).status_code == 200
    r = anon.get("/console", follow_redirects=False)
    assert r.status_code == 307 and r.headers["location"] == "/console/"
    r = anon.get("/", follow_redirects=False)
    assert r.status_code == 307 and r.headers["location"].startswith("/")
    assert_problem(anon.get("/api/nowhere/", follow_redirects=False), 404)


def test_head_and_405(anon: ApiClient) -> None:
    r = anon.head("/healthz")
    assert r.status_code == 200 and r.content == b""
    r = anon.delete("/healthz")
    assert_problem(r, 405)
    assert "GET" in r.headers["allow"]

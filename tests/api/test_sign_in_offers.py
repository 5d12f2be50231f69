"""``GET /api/auth/sign-in-offers`` without any sign-in plugin: an empty list, never a
404, so the console's login page loads without a failed request."""

from __future__ import annotations

from remote_server.testing.liveserver import ApiClient


def test_no_offer_without_a_sign_in_plugin(anon: ApiClient) -> None:
    r = anon.get("/api/auth/sign-in-offers")
    assert r.status_code == 200
    assert r.json() == []
    assert r.headers["cache-control"] == "no-store"

"""T18: an administrator demoted to technician loses the admin routes at once, token or not.

Password change, deletion and disabling are in tests/api/test_auth.py and
tests/relay/test_standing.py; a login token lives 8 hours, so what it may do
must be read from the account at each request, not from the token (a role change
also ends the account's logins, tests/relay/test_revocation.py).
"""

from __future__ import annotations

import uuid

from remote_server.web.api import ENDPOINTS

from .conftest import Admin

PASSWORD = "second-admin-password"
ADMIN_READS = [ep.path for ep in ENDPOINTS if ep.access == "admin" and ep.method == "GET"
               and "{" not in ep.path]


def test_t18_a_demoted_admins_token_is_refused_on_every_admin_route(admin: Admin) -> None:
    name = f"admin-{uuid.uuid4().hex[:8]}"
    user = admin.ok("POST", "/api/users", 201, json={"username": name, "password": PASSWORD,
                                                     "role": "admin"})
    second = Admin(admin.server, name, PASSWORD)
    assert ADMIN_READS, "no admin route to try"
    for path in ADMIN_READS:
        second.ok("GET", path)  # an admin while an admin
    admin.ok("PATCH", f"/api/users/{user['id']}", json={"role": "technician"})
    for path in ADMIN_READS:  # a role change ends the account's logins at once
        assert second.ok("GET", path, 401) is not None
    second = Admin(admin.server, name, PASSWORD)  # and a new login is a technician's
    for path in ADMIN_READS:
        second.ok("GET", path, 403)
    second.ok("POST", "/api/machines", 403, json={})
    second.ok("POST", "/api/users", 403, json={"username": "x" + name, "password": PASSWORD})
    assert second.ok("GET", "/api/auth/me")["role"] == "technician"
    assert "x" + name not in {u["username"] for u in admin.ok("GET", "/api/users")}

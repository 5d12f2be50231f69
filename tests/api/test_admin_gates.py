"""Every admin endpoint answers 403 to a technician and 401 to nobody (SPEC 5.1.4)."""

from __future__ import annotations

import re

import pytest
from remote_server.testing.liveserver import ApiClient, assert_problem
from remote_server.web.api import ENDPOINTS
from remote_server.web.api.endpoint import Endpoint

ADMIN_ONLY = [ep for ep in ENDPOINTS if ep.access == "admin"]


def test_the_removal_endpoints_are_admin_only() -> None:
    gated = {(ep.method, ep.path) for ep in ADMIN_ONLY}
    for required in [("DELETE", "/api/machines/{agent_id}"),
                     ("DELETE", "/api/sessions/{session_id}"),
                     ("POST", "/api/machines/bulk-remove"),
                     ("POST", "/api/machines/{agent_id}/keys"),
                     ("GET", "/api/machines/{agent_id}/keys"),
                     ("DELETE", "/api/machines/{agent_id}/keys/{key_id}"),
                     ("POST", "/api/machines/{agent_id}/update"),
                     ("GET", "/api/users"), ("GET", "/api/events")]:
        assert required in gated, required


@pytest.mark.parametrize("ep", ADMIN_ONLY, ids=lambda ep: f"{ep.method} {ep.path}")
def test_admin_endpoint_refuses_a_technician(ep: Endpoint, admin: ApiClient,
                                             tech: ApiClient, anon: ApiClient) -> None:
    machine = admin.post("/api/machines", json={}).json()["agent_id"]
    path = re.sub(r"{(\w+)}", lambda m: machine if m.group(1) == "agent_id" else "x1",
                  ep.path)
    method = ep.method
    assert_problem(tech.request(method, path, json={}), 403, "administrators")
    assert_problem(anon.request(method, path, json={}), 401)
    assert admin.get(f"/api/machines/{machine}").status_code == 200, "nothing was removed"

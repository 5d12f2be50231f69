"""The live API document as schemathesis sees it, logged in as the first admin.

Shared by the conformance fuzz (tests/api) and the security checks
(tests/security) so both fuzz the same operations the same way.
"""

from __future__ import annotations

from typing import Any

import httpx

__all__ = ["admin_schema"]


def admin_schema(base_url: str, admin_password: str) -> Any:
    """The document at ``base_url`` with the first admin's bearer token on every case;
    password changes left out, since one would log the fuzzer out half-way."""
    import schemathesis

    loaded = schemathesis.openapi.from_url(f"{base_url}/api/openapi.json")
    token = httpx.post(f"{base_url}/api/auth/login", timeout=30,
                       json={"username": "admin", "password": admin_password}).json()

    @loaded.auth()
    class AdminToken:
        def get(self, case: Any, context: Any) -> str:
            return str(token["access_token"])

        def set(self, case: Any, data: str, context: Any) -> None:
            case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}

    return loaded.exclude(path="/api/auth/change-password")

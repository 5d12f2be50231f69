"""Finding the local services tests need (PostgreSQL, Redis, NATS).

A missing service skips the test with a clear reason, unless
``REMOTE_SUPPORT_REQUIRE_SERVICES=1`` (set by CI), where it fails instead.
"""

from __future__ import annotations

import os
import socket
import uuid
from typing import NoReturn

import pytest

__all__ = ["POSTGRES_ADMIN_URL", "require_service", "services_required", "unavailable"]

POSTGRES_ADMIN_URL = os.environ.get(
    "REMOTE_SUPPORT_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
"""Where the test PostgreSQL is (trust auth); tests create their own databases in it."""


def services_required() -> bool:
    return os.environ.get("REMOTE_SUPPORT_REQUIRE_SERVICES", "").lower() in {"1", "true", "yes"}


def require_service(name: str, host: str, port: int) -> None:
    """Skip (or, when services are required, fail) unless ``host:port`` accepts connections."""
    try:
        with socket.create_connection((host, port), timeout=2):
            return
    except OSError as exc:
        unavailable(f"{name} is not reachable at {host}:{port} ({exc})")


def unavailable(reason: str) -> NoReturn:
    """A test's service or tool is missing: skip, or fail where services are required."""
    if services_required():
        pytest.fail(f"{reason}; REMOTE_SUPPORT_REQUIRE_SERVICES=1 requires it")
    pytest.skip(reason)


def unique_name(prefix: str) -> str:
    """A name no other test run uses (databases, schemas, subjects)."""
    return f"{prefix}_{uuid.uuid4().hex[:12]}"

"""What every test suite of this repository shares (plugin authors' suites bring their own)."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """asyncio: what the server (uvicorn, on uvloop) and the agent run on."""
    return "asyncio"

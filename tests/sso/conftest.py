"""The OpenID provider every single sign-on test of this plugin shares."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from remote_server.testing.oidc_provider import OpenIdProvider

from .servers import USERS


@pytest.fixture(scope="session")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpenIdProvider]:
    with OpenIdProvider(tmp_path_factory.mktemp("provider"), USERS) as running:
        yield running

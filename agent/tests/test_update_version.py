"""Which versions may replace the running agent (SPEC 9: semantic, never a downgrade)."""

from __future__ import annotations

import pytest
from remote_agent.update_version import is_newer


@pytest.mark.parametrize(("candidate", "current"), [
    ("1.0.1", "1.0.0"), ("1.10.0", "1.9.9"), ("2.0.0", "1.99.99"),
    ("1.0.0", "1.0.0-rc.1"), ("1.0.0-rc.2", "1.0.0-rc.1"), ("1.0.0-rc.10", "1.0.0-rc.2"),
    ("1.0.0-beta", "1.0.0-alpha.9"), ("1.0.0-alpha.1", "1.0.0-alpha"),
    ("0.1.0", "0.1.0.dev0"),  # a development build that is not semver yields to a release
])
def test_newer(candidate, current):
    assert is_newer(candidate, current)


@pytest.mark.parametrize(("candidate", "current"), [
    ("1.0.0", "1.0.0"), ("0.9.9", "1.0.0"), ("1.0.0-rc.1", "1.0.0"),
    ("1.0.0+build.7", "1.0.0"), ("1.9.0", "1.10.0"), ("1.0.0-alpha", "1.0.0-alpha.1"),
])
def test_not_newer(candidate, current):
    assert not is_newer(candidate, current)


@pytest.mark.parametrize("candidate", ["", "1.0", "v1.0.1", "1.0.1; rm -rf /", "01.0.0"])
def test_a_version_that_is_not_semver_is_an_error(candidate):
    with pytest.raises(ValueError, match="not a semantic version"):
        is_newer(candidate, "1.0.0")

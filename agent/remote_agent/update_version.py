"""Which release may replace the running agent: strictly newer by semantic version."""

from __future__ import annotations

from remote_core.semver import is_semver, semver_key

__all__ = ["is_newer"]


def is_newer(candidate: str, current: str) -> bool:
    """``True`` when ``candidate`` outranks ``current`` (SPEC 9: never a downgrade).

    Pre-releases rank below their release (``1.1.0-rc.1 < 1.1.0``); build metadata is
    ignored, so ``1.0.0+b2`` is not newer than ``1.0.0``.

    :raises ValueError: ``candidate`` is not a semantic version.
    """
    if not is_semver(candidate):
        raise ValueError(f"{candidate!r} is not a semantic version such as 1.4.2")
    if not is_semver(current):  # a development build: any release replaces it
        return True
    return semver_key(candidate) > semver_key(current)

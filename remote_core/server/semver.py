"""Semantic versions for the API; the rules live in :mod:`remote_core.semver`."""

from __future__ import annotations

from ..semver import SEMVER_PATTERN, is_semver, semver_key

__all__ = ["SEMVER_PATTERN", "is_semver", "semver_key"]

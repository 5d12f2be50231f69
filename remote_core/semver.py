"""Semantic versions (semver.org 2.0): parsing and precedence, for releases and updates."""

from __future__ import annotations

import re

__all__ = ["SEMVER_PATTERN", "is_semver", "semver_key"]

SEMVER_PATTERN = (
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
_SEMVER = re.compile(SEMVER_PATTERN)

Key = tuple[int, int, int, int, tuple[tuple[int, int, str], ...]]


def is_semver(text: str) -> bool:
    return _SEMVER.match(text) is not None


def semver_key(text: str) -> Key:
    """Sort key by semver precedence: a pre-release sorts before its release; build is ignored."""
    match = _SEMVER.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a semantic version such as 1.4.2")
    major, minor, patch, pre, _build = match.groups()
    if pre is None:
        return int(major), int(minor), int(patch), 1, ()
    # Numeric identifiers sort below alphanumeric ones, numerically among themselves.
    parts = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split("."))
    return int(major), int(minor), int(patch), 0, parts

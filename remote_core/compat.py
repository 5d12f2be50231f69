"""Which core a plugin was built for: its distribution's requirement on ``remote-core``.

Every plugin distribution names the range of the core it supports (for
example ``remote-core>=0.1,<0.2``). A plugin built for another range would
fail in ways far from their cause (a hook argument that is not there, a type
that changed), so it is not loaded, and ``remote-support plugins`` says why.
"""

from __future__ import annotations

from importlib.metadata import Distribution, PackageNotFoundError, version

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

__all__ = ["CORE_DISTRIBUTION", "core_version", "incompatibility"]

CORE_DISTRIBUTION = "remote-core"


def core_version() -> str:
    """The installed core's version (``0.0.0`` in a bare source tree)."""
    try:
        return version(CORE_DISTRIBUTION)
    except PackageNotFoundError:  # pragma: no cover - running from a bare source tree
        return "0.0.0"


def incompatibility(dist: Distribution | None, core: str | None = None) -> str | None:
    """Why the plugin distribution ``dist`` cannot run on this core, or None if it can.

    A distribution that names no core requirement is taken at its word.
    """
    if dist is None:
        return None
    installed = core or core_version()
    for line in dist.requires or ():
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if requirement.name.lower() != CORE_DISTRIBUTION or requirement.marker is not None:
            continue
        try:
            if requirement.specifier.contains(Version(installed), prereleases=True):
                return None
        except InvalidVersion:
            return None
        return (f"{dist.name} {dist.version} is built for {CORE_DISTRIBUTION}"
                f"{requirement.specifier}; this is {CORE_DISTRIBUTION} {installed}: install a "
                f"release of {dist.name} made for it")
    return None

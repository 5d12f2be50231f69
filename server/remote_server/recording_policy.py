"""Which sessions are recorded and how long their recordings are kept: a setting for every
machine, refined by entries for a tenant, an organization, a tag or one machine. No I/O.

A mode (``recordings``, refined by ``recording_policy``) is ``off``, ``on`` (recorded;
attended end users are told before consenting and while it runs) or ``notice``
(recorded, and every end user sees it: managed machines show the session panel, which
says the session is being recorded). A retention (``recordings_keep_days``, refined by
``recording_retention``) is a number of days, 0 keeping them for good.

The most specific entry wins: a machine's own, then its tags' (the strongest of them: the
most recording mode, the longest retention, so a tag that asks for more is never outvoted
by another), then its organization's, then its tenant's, then the setting for every
machine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from remote_core.errors import ConfigError
from remote_core.records import DEFAULT_TENANT_ID

__all__ = ["MODES", "RecordingPolicy", "Retention", "Scoped"]

MODES = ("off", "on", "notice")
"""From the weakest to the strongest."""
_SCOPES = ("organization", "tag", "machine", "tenant")

T = TypeVar("T")


@dataclass(frozen=True)
class Scoped(Generic[T]):
    """A value for every machine and the entries that refine it."""

    default: T
    organizations: dict[str, T] = field(default_factory=dict)
    tags: dict[str, T] = field(default_factory=dict)
    machines: dict[str, T] = field(default_factory=dict)
    tenants: dict[str, T] = field(default_factory=dict)

    @staticmethod
    def entries(setting: str, entries: Iterable[str], value: Callable[[str], T],
                shape: str) -> tuple[dict[str, T], dict[str, T], dict[str, T], dict[str, T]]:
        """``SCOPE:NAME=VALUE`` entries by scope (organizations, tags, machines, tenants by
        id).

        :raises ConfigError: naming the setting and the entry that is not one (``shape``
            says what a value may be).
        """
        scoped: dict[str, dict[str, T]] = {scope: {} for scope in _SCOPES}
        for entry in entries:
            target, sep, raw = entry.rpartition("=")
            scope, colon, name = target.partition(":")
            try:
                parsed = value(raw) if sep and colon and scope in scoped and name else None
            except ValueError:
                parsed = None
            if parsed is None:
                raise ConfigError(
                    f"setting {setting!r}: expected organization:NAME=VALUE, tag:NAME=VALUE, "
                    f"machine:AGENT_ID=VALUE or tenant:TENANT_ID=VALUE (VALUE {shape}), "
                    f"got {entry!r}")
            if scoped[scope].setdefault(name, parsed) != parsed:
                raise ConfigError(f"setting {setting!r}: {scope} {name!r} is given two "
                                  f"values, {scoped[scope][name]} and {parsed}")
        return scoped["organization"], scoped["tag"], scoped["machine"], scoped["tenant"]

    def values(self) -> list[T]:
        return [self.default, *self.organizations.values(), *self.tags.values(),
                *self.machines.values(), *self.tenants.values()]

    def pick(self, strongest: Callable[[list[T]], T], *, agent_id: str, organization: str,
             tags: Iterable[str], tenant_id: str = DEFAULT_TENANT_ID) -> T:
        """The value for one machine (``strongest`` chooses among its tags' values)."""
        if agent_id in self.machines:
            return self.machines[agent_id]
        tagged = [self.tags[tag] for tag in tags if tag in self.tags]
        if tagged:
            return strongest(tagged)
        if organization in self.organizations:
            return self.organizations[organization]
        return self.tenants.get(tenant_id, self.default)


def _mode(raw: str) -> str:
    if raw not in MODES:
        raise ValueError(raw)
    return raw


class RecordingPolicy(Scoped[str]):
    """Whether a machine's sessions are recorded: off, on or notice."""

    @classmethod
    def parse(cls, default: str, entries: Iterable[str]) -> RecordingPolicy:
        """From ``recordings`` and ``recording_policy``.

        :raises ConfigError: naming the setting and what is wrong.
        """
        if default not in MODES:
            raise ConfigError(f"setting 'recordings' must be off, on or notice, got {default!r}")
        return cls(default, *cls.entries("recording_policy", entries, _mode,
                                         "off, on or notice"))

    @property
    def records_any(self) -> bool:
        """Whether some machine may be recorded (the server opens its recording store)."""
        return any(mode != "off" for mode in self.values())

    def mode(self, *, agent_id: str, organization: str, tags: Iterable[str],
             tenant_id: str = DEFAULT_TENANT_ID) -> str:
        return self.pick(lambda found: max(found, key=MODES.index), agent_id=agent_id,
                         organization=organization, tags=tags, tenant_id=tenant_id)


def _days(raw: str) -> int:
    days = int(raw)
    if days < 0:
        raise ValueError(raw)
    return days


def _longest(found: list[int]) -> int:
    return 0 if 0 in found else max(found)


class Retention(Scoped[int]):
    """How many days a machine's recordings are kept (0: for good)."""

    @classmethod
    def parse(cls, default: int, entries: Iterable[str]) -> Retention:
        """From ``recordings_keep_days`` and ``recording_retention``.

        :raises ConfigError: naming the setting and what is wrong.
        """
        if default < 0:
            raise ConfigError("setting 'recordings_keep_days' must be 0 (keep) or more, got "
                              f"{default}")
        return cls(default, *cls.entries("recording_retention", entries, _days,
                                         "days, 0 keeping them"))

    @property
    def shortest(self) -> int:
        """The fewest days any recording is kept (0: every one is kept for good)."""
        return min((days for days in self.values() if days), default=0)

    def days(self, *, agent_id: str, organization: str, tags: Iterable[str],
             tenant_id: str = DEFAULT_TENANT_ID) -> int:
        return self.pick(_longest, agent_id=agent_id, organization=organization, tags=tags,
                         tenant_id=tenant_id)

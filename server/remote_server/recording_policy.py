"""Which sessions are recorded: the ``recordings`` setting for every machine, refined by
``recording_policy`` entries for an organization, a tag or one machine. No I/O.

A mode is ``off``, ``on`` (recorded; attended end users are told before consenting and
while it runs) or ``notice`` (recorded, and every end user sees it: managed machines show
the session panel, which says the session is being recorded). The most specific entry
wins: a machine's own, then its tags' (the strongest of them, so a tag that asks for a
recording is never outvoted by another), then its organization's, then ``recordings``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from remote_core.errors import ConfigError

__all__ = ["MODES", "RecordingPolicy"]

MODES = ("off", "on", "notice")
"""From the weakest to the strongest."""
_SCOPES = ("organization", "tag", "machine")


@dataclass(frozen=True)
class RecordingPolicy:
    default: str = "off"
    organizations: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    machines: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, default: str, entries: Iterable[str]) -> RecordingPolicy:
        """From the settings: ``default`` a mode, each entry ``SCOPE:NAME=MODE``.

        :raises ConfigError: naming the setting and the entry that is not one.
        """
        if default not in MODES:
            raise ConfigError(f"setting 'recordings' must be off, on or notice, got {default!r}")
        scoped: dict[str, dict[str, str]] = {scope: {} for scope in _SCOPES}
        for entry in entries:
            target, sep, mode = entry.rpartition("=")
            scope, colon, name = target.partition(":")
            if not sep or not colon or scope not in scoped or not name or mode not in MODES:
                raise ConfigError(
                    "setting 'recording_policy': expected organization:NAME=MODE, "
                    f"tag:NAME=MODE or machine:AGENT_ID=MODE (MODE off, on or notice), "
                    f"got {entry!r}")
            if scoped[scope].setdefault(name, mode) != mode:
                raise ConfigError(f"setting 'recording_policy': {scope} {name!r} is given "
                                  f"two modes, {scoped[scope][name]} and {mode}")
        return cls(default, scoped["organization"], scoped["tag"], scoped["machine"])

    @property
    def records_any(self) -> bool:
        """Whether some machine may be recorded (the server opens its recording store)."""
        return any(mode != "off" for mode in (self.default, *self.organizations.values(),
                                              *self.tags.values(), *self.machines.values()))

    def mode(self, *, agent_id: str, organization: str, tags: Iterable[str]) -> str:
        """The mode for one machine's sessions."""
        if agent_id in self.machines:
            return self.machines[agent_id]
        tagged = [self.tags[tag] for tag in tags if tag in self.tags]
        if tagged:
            return max(tagged, key=MODES.index)
        return self.organizations.get(organization, self.default)

"""The agent's settings: ``REMOTE_AGENT_*`` variables, one per option.

The config file (``agent.toml``) holds what the agent keeps between runs (its
identity, server and key); these are how it runs: which plugins it loads and
their options (``REMOTE_AGENT_PLUGIN_<NAME>_<KEY>``), the capture and input
backends, and the intervals of its periodic work.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from remote_core.errors import ConfigError
from remote_core.plugins import CODEC_PLUGINS
from remote_core.settings import PluginSettings, option, positive

from .session import Timing

__all__ = ["AgentSettings"]


@dataclass(frozen=True, repr=False)
class AgentSettings(PluginSettings):
    """Every setting of ``remote-agent``."""

    ENV_PREFIX: ClassVar[str] = "REMOTE_AGENT_"
    FILE_SECTION: ClassVar[str] = "agent"
    DEFAULT_PLUGINS: ClassVar[tuple[str, ...] | None] = (
        *CODEC_PLUGINS, "capture_mss", "input_pynput", "consent_dialog")

    capture: str | None = option(
        None, "screen-capture backend by name (default: the available one of highest priority)")
    input: str | None = option(
        None, "input-injection backend by name (default: the available one of highest priority)")
    heartbeat_interval: float = option(15.0, "seconds between heartbeats")
    heartbeat_timeout: float = option(45.0, "seconds of silence before the server counts "
                                            "as gone and the agent reconnects")
    status_interval: float = option(60.0, "seconds between status reports")
    update_interval: float = option(3600.0, "seconds between update checks while idle "
                                            "(managed agents, SPEC 8)")
    backstage_user: str | None = option(
        None, "account whose shell a BACKSTAGE terminal runs on a managed agent (default: "
              "the agent's own; another needs the agent to run as root); attended agents "
              "always run the agent user's login shell")
    backstage_shell: str | None = option(
        None, "absolute path of the shell a BACKSTAGE terminal runs on a managed agent "
              "(default: the account's login shell)")
    file_roots: tuple[str, ...] = option(
        (), "folders a FILE_TRANSFER viewer may browse, download from and upload to, "
            "comma-separated, each shown under its folder's name (default: the home folder "
            "of the account the agent runs as, which on an attended session is the end "
            "user's); nothing outside them, symlinks resolved, is reachable")

    def validate(self) -> None:
        super().validate()
        positive(self, "heartbeat_interval", "heartbeat_timeout", "status_interval",
                 "update_interval")
        if self.heartbeat_timeout <= self.heartbeat_interval:
            raise ConfigError("setting 'heartbeat_timeout' must exceed 'heartbeat_interval'")

    def timing(self) -> Timing:
        """The session's intervals, from these settings."""
        return Timing(heartbeat=self.heartbeat_interval, silence=self.heartbeat_timeout,
                      status=self.status_interval, update_check=self.update_interval)

"""Settings for every program that loads plugins: defaults < TOML file < environment < flags.

A program's settings are a frozen dataclass extending :class:`PluginSettings`
(the server's ``ServerSettings``, the agent's ``AgentSettings``). Each option
has an environment variable ``<ENV_PREFIX><NAME>`` and, where the program
offers flags, ``--<name-with-dashes>`` (CONTRACT 4). Bad values raise
:class:`ConfigError` naming the setting, the source and what would be right.

A plugin's own options live in its namespace: ``[plugins.NAME]`` in the TOML
file, ``<ENV_PREFIX>PLUGIN_<NAME>_<KEY>`` in the environment. Only that mapping
reaches the plugin's factories (see :meth:`Plugins.options
<remote_core.plugins.Plugins.options>`), never the program's own secrets.
"""

from __future__ import annotations

import argparse
import os
import tomllib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, Self

from .errors import ConfigError

__all__ = ["PluginSettings", "option", "positive"]


def option(default: Any, help: str, *, secret: bool = False, cli: bool = True) -> Any:
    """A setting: its default, one line of help, whether it is secret (never shown by
    ``repr``) and whether the program offers a flag for it (secrets come from the
    environment or the file only, never a command line other users can read)."""
    return field(default=default, metadata={"help": help, "secret": secret, "cli": cli})


def _namespace(default_factory: Any, help: str) -> Any:
    """A field filled only from plugin namespaces, never a setting of its own name."""
    return field(default_factory=default_factory, compare=False,
                 metadata={"help": help, "secret": True, "cli": False, "namespace": True})


@dataclass(frozen=True)
class PluginSettings:
    """What every plugin-loading program shares: which plugins load, and their options."""

    ENV_PREFIX: ClassVar[str] = "REMOTE_SUPPORT_"
    """Prefix of the program's environment variables."""
    FILE_SECTION: ClassVar[str] = "remote_support"
    """Table of the TOML file holding the settings (a file without it is read whole)."""
    ENV_ALIASES: ClassVar[Mapping[str, tuple[str, str]]] = {}
    """Older variables (without the prefix) that set a plugin option: name -> (plugin, key)."""
    DEFAULT_PLUGINS: ClassVar[tuple[str, ...] | None] = None
    """The built-ins this program loads when ``plugins`` is unset (None: every built-in)."""

    plugins: tuple[str, ...] | None = option(
        None, "plugins to load by name (default: the built-ins)")
    extra_plugins: tuple[str, ...] = option(
        (), "plugins to load in addition to the default set or the PLUGINS list")
    autoload_plugins: bool = option(False, "development: load every installed plugin")
    block_plugins: tuple[str, ...] = option((), "plugins never to load")
    log_level: str = option("info", "log level (debug, info, warning, error)")
    plugin_tables: Mapping[str, Mapping[str, Any]] = _namespace(
        dict, "plugin options from the file's [plugins.NAME] tables")
    plugin_environ: Mapping[str, str] = _namespace(
        dict, "plugin options from <PREFIX>PLUGIN_<NAME>_<KEY> variables, name and key unsplit")

    def __repr__(self) -> str:
        shown = []
        for f in fields(self):
            value = getattr(self, f.name)
            if f.metadata.get("namespace"):
                value = sorted(value)  # names only: plugin options may be secrets
            elif f.metadata.get("secret") and value is not None:
                value = "***"
            shown.append(f"{f.name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` applied and validated."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return type(self)._build({**values, **changes}, "replace()")

    def validate(self) -> None:
        """Raise :class:`ConfigError` for a combination of values that cannot work."""
        if self.log_level.lower() not in {"trace", "debug", "info", "warning", "error", "critical"}:
            raise ConfigError(f"setting 'log_level' must be debug, info, warning or error, "
                              f"got {self.log_level!r}")

    # -- plugin options --------------------------------------------------------
    def plugin_options(self, installed: Collection[str]) -> dict[str, dict[str, Any]]:
        """Each plugin's options, by plugin name, from the file and then the environment.

        An environment variable belongs to the longest installed name it starts
        with; a table or variable naming no installed plugin is an error (a typo
        must not pass silently).
        """
        options: dict[str, dict[str, Any]] = {}
        for name, table in self.plugin_tables.items():
            if name not in installed:
                raise ConfigError(f"options given in [plugins.{name}] for a plugin that is not "
                                  f"installed; installed: {sorted(installed) or 'none'}")
            options[name] = dict(table)
        by_length = sorted(installed, key=len, reverse=True)
        for rest, value in self.plugin_environ.items():
            owner = next((n for n in by_length if rest.startswith(n.upper() + "_")), None)
            key = rest[len(owner) + 1:].lower() if owner else ""
            if owner is None or not key:
                raise ConfigError(
                    f"{self.ENV_PREFIX}PLUGIN_{rest} names no installed plugin and option "
                    f"(<name>_<key>); installed: {sorted(installed) or 'none'}")
            options.setdefault(owner, {})[key] = value
        return options

    # -- loading -----------------------------------------------------------------
    @classmethod
    def load(cls, cli: Mapping[str, Any] | None = None,
             environ: Mapping[str, str] | None = None,
             config_file: str | os.PathLike[str] | None = None) -> Self:
        """Merge the sources in order of precedence; raise ConfigError on any bad value."""
        environ = os.environ if environ is None else environ
        kinds = cls._kinds()
        cli_values = {k: v for k, v in (cli or {}).items() if k in kinds and v is not None}
        env_values: dict[str, Any] = {
            name: environ[cls.ENV_PREFIX + name.upper()]
            for name in kinds if cls.ENV_PREFIX + name.upper() in environ}
        env_values["plugin_environ"] = cls._plugin_environ(environ)
        path = config_file or cli_values.get("config") or env_values.get("config")
        file_values = cls._read_file(Path(path)) if path else {}
        # Validate each source on its own so the error names where a bad value came from.
        for values, source in ((file_values, f"file {path}"), (env_values, "environment"),
                               (cli_values, "command line")):
            cls._build(values, source)
        return cls._build({**file_values, **env_values, **cli_values}, "settings")

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """Add a ``--flag`` for every CLI-visible setting (default ``None`` = not given)."""
        for f in fields(cls):
            if f.metadata.get("cli", True):
                parser.add_argument("--" + f.name.replace("_", "-"), dest=f.name, default=None,
                                    help=f.metadata["help"])

    @classmethod
    def _kinds(cls) -> dict[str, str]:
        """Each setting's declared type, as text; namespaces are not settings of their own."""
        return {f.name: str(f.type) for f in fields(cls) if not f.metadata.get("namespace")}

    @classmethod
    def _plugin_environ(cls, environ: Mapping[str, str]) -> dict[str, str]:
        prefix = cls.ENV_PREFIX + "PLUGIN_"
        found = {k[len(prefix):]: v for k, v in environ.items() if k.startswith(prefix)}
        for old, (plugin, key) in cls.ENV_ALIASES.items():
            if cls.ENV_PREFIX + old in environ:
                found.setdefault(f"{plugin.upper()}_{key.upper()}", environ[cls.ENV_PREFIX + old])
        return found

    @classmethod
    def _read_file(cls, path: Path) -> dict[str, Any]:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"settings file {path} does not exist") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"settings file {path} is not valid TOML: {exc}") from None
        tables = data.get("plugins")
        if cls.FILE_SECTION in data:
            values = dict(data[cls.FILE_SECTION])
        else:  # a flat file: its [plugins.NAME] tables leave no room for a list of names
            values = {k: v for k, v in data.items() if not (k == "plugins" and
                                                              isinstance(v, Mapping))}
        if isinstance(tables, Mapping):
            bad = sorted(name for name, table in tables.items() if not isinstance(table, Mapping))
            if bad:
                raise ConfigError(f"settings file {path}: plugins.{bad[0]} must be a table "
                                  f"[plugins.{bad[0]}] of that plugin's options")
            values["plugin_tables"] = {name: dict(table) for name, table in tables.items()}
        return values

    @classmethod
    def _build(cls, values: Mapping[str, Any], source: str) -> Self:
        kinds = cls._kinds()
        namespaces = {f.name for f in fields(cls) if f.metadata.get("namespace")}
        unknown = sorted(set(values) - set(kinds) - namespaces)
        if unknown:
            raise ConfigError(f"unknown setting(s) {unknown} in {source}; known: {sorted(kinds)}")
        parsed = {name: (raw if name in namespaces else _parse(name, kinds[name], raw, source))
                  for name, raw in values.items()}
        settings = cls(**parsed)
        settings.validate()
        return settings


def positive(settings: PluginSettings, *names: str) -> None:
    """Raise :class:`ConfigError` unless every named setting is above zero."""
    for name in names:
        value = getattr(settings, name)
        if value <= 0:
            raise ConfigError(f"setting {name!r} must be positive, got {value}")


def _parse(name: str, kind: str, raw: Any, source: str) -> Any:
    """Coerce ``raw`` from ``source`` to the field's type, or raise a clear ConfigError."""
    where = f"setting {name!r} from {source}"
    if raw is None:
        if "None" in kind:
            return None
        raise ConfigError(f"{where} must not be empty")
    if kind.startswith("tuple"):
        if isinstance(raw, str):
            items = [p.strip() for p in raw.split(",") if p.strip()]
        elif isinstance(raw, Sequence):
            items = [str(p).strip() for p in raw]
        else:
            raise ConfigError(f"{where}: expected a comma-separated list, got {raw!r}")
        return tuple(items)
    if kind == "bool":
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in {"1", "true", "yes", "on"}:
            return True
        if text in {"0", "false", "no", "off", ""}:
            return False
        raise ConfigError(f"{where}: expected true or false, got {raw!r}")
    if kind in {"int", "float"}:
        if isinstance(raw, bool):
            raise ConfigError(f"{where}: expected a number ({kind}), got {raw!r}")
        try:
            return int(raw) if kind == "int" else float(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: expected a number ({kind}), got {raw!r}") from None
    if not isinstance(raw, str):
        raise ConfigError(f"{where}: expected text, got {raw!r}")
    return raw


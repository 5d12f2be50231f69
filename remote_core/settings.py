"""One settings object, read from defaults < TOML file < environment < command line.

Each option has an environment variable ``REMOTE_SUPPORT_<NAME>`` and a flag
``--<name-with-dashes>`` of the same meaning (CONTRACT 4). Bad values raise
:class:`ConfigError` naming the setting, the source and what would be right.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .errors import ConfigError

__all__ = ["ENV_PREFIX", "Settings", "add_arguments", "load_settings"]

ENV_PREFIX = "REMOTE_SUPPORT_"


def _opt(default: Any, help: str, *, secret: bool = False, cli: bool = True) -> Any:
    return field(default=default, metadata={"help": help, "secret": secret, "cli": cli})


@dataclass(frozen=True)
class Settings:
    """Every setting of the server and the core. Secrets are never shown by ``repr``."""

    host: str = _opt("127.0.0.1", "listen address")
    port: int = _opt(8080, "listen port (0 picks a free one)")
    database_url: str = _opt("sqlite:///remote-support.db", "SQLAlchemy URL of the database")
    admin_password: str | None = _opt(
        None, "first admin's password, used only when no user exists", secret=True, cli=False
    )
    public_origins: tuple[str, ...] = _opt((), "origins allowed on /ws/viewer (default: own)")
    trusted_proxies: tuple[str, ...] = _opt((), "addresses/networks whose X-Forwarded-For counts")
    shared_agent_key: str | None = _opt(
        None, "deprecated shared agent key (unset disables it)", secret=True, cli=False
    )
    plugins: tuple[str, ...] | None = _opt(None, "plugins to load by name (default: built-ins)")
    autoload_plugins: bool = _opt(False, "development: load every installed plugin")
    block_plugins: tuple[str, ...] = _opt((), "plugins never to load")
    jwt_secret: str | None = _opt(
        None, "token signing secret (default: generated and stored)", secret=True, cli=False
    )
    login_token_ttl: int = _opt(8 * 3600, "login token lifetime, seconds")
    signing_key_refresh: float = _opt(
        30.0, "seconds between rereads of the token-signing keys (a rotation reaches a "
              "running server within this)")
    max_message_bytes: int = _opt(16 * 1024 * 1024, "largest WebSocket message accepted")
    heartbeat_interval: float = _opt(15.0, "seconds between heartbeats")
    heartbeat_timeout: float = _opt(45.0, "seconds of silence before a peer is dropped")
    first_message_timeout: float = _opt(10.0, "seconds to wait for session_request")
    max_pending_sockets_per_ip: int = _opt(
        32, "WebSockets one client address may hold open before their session_request")
    max_pending_sockets: int = _opt(
        1024, "WebSockets all addresses together may hold open before their session_request")
    request_body_timeout: float = _opt(30.0, "seconds a client has to send a request body")
    consent_timeout: int = _opt(60, "seconds an attended agent has to answer consent")
    viewer_buffer_bytes: int = _opt(8 * 1024 * 1024, "video bytes queued per viewer at most")
    ws_impl: str = _opt("websockets-sansio",
                        "uvicorn WebSocket implementation (fastest measured: bench/relay.py)")
    loop: str = _opt("auto", "uvicorn event loop (auto, asyncio, uvloop); auto picks uvloop, "
                             "the fastest measured, where it is installed")
    log_level: str = _opt("info", "log level")
    config: str | None = _opt(None, "TOML settings file")

    def __repr__(self) -> str:
        shown = []
        for f in fields(self):
            value = getattr(self, f.name)
            if f.metadata.get("secret") and value is not None:
                value = "***"
            shown.append(f"{f.name}={value!r}")
        return f"Settings({', '.join(shown)})"

    def replace(self, **changes: Any) -> Settings:
        """A copy with ``changes`` applied and validated."""
        return _build({**dataclasses.asdict(self), **changes}, "replace()")


def _field_types() -> dict[str, str]:
    return {f.name: str(f.type) for f in fields(Settings)}


def _parse(name: str, kind: str, raw: Any, source: str) -> Any:
    """Coerce ``raw`` from ``source`` to the field's type, or raise a clear ConfigError."""
    where = f"setting {name!r} from {source}"
    if raw is None:
        if "None" in kind:
            return None
        raise ConfigError(f"{where} must not be empty")
    if kind.startswith("tuple") :
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
        try:
            number = int(raw) if kind == "int" else float(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: expected a number ({kind}), got {raw!r}") from None
        if isinstance(raw, bool):
            raise ConfigError(f"{where}: expected a number ({kind}), got {raw!r}")
        return number
    if not isinstance(raw, str):
        raise ConfigError(f"{where}: expected text, got {raw!r}")
    return raw


def _check(values: Mapping[str, Any]) -> None:
    port = values["port"]
    if not 0 <= port <= 65535:
        raise ConfigError(f"setting 'port' must be 0-65535, got {port}")
    for name in ("max_message_bytes", "viewer_buffer_bytes", "login_token_ttl", "consent_timeout",
                 "max_pending_sockets_per_ip", "max_pending_sockets"):
        if values[name] <= 0:
            raise ConfigError(f"setting {name!r} must be positive, got {values[name]}")
    for name in ("heartbeat_interval", "heartbeat_timeout", "first_message_timeout",
                 "signing_key_refresh"):
        if values[name] <= 0:
            raise ConfigError(f"setting {name!r} must be positive, got {values[name]}")
    if values["heartbeat_timeout"] <= values["heartbeat_interval"]:
        raise ConfigError("setting 'heartbeat_timeout' must exceed 'heartbeat_interval'")
    if "://" not in values["database_url"]:
        raise ConfigError(
            f"setting 'database_url' must be a URL such as sqlite:///remote-support.db, "
            f"got {values['database_url']!r}"
        )
    if values["loop"] not in {"auto", "asyncio", "uvloop"}:
        raise ConfigError(f"setting 'loop' must be auto, asyncio or uvloop, got {values['loop']!r}")
    if values["ws_impl"] not in {"auto", "websockets", "websockets-sansio", "wsproto"}:
        raise ConfigError(
            "setting 'ws_impl' must be auto, websockets, websockets-sansio or wsproto, "
            f"got {values['ws_impl']!r}"
        )


def _build(values: Mapping[str, Any], source: str) -> Settings:
    kinds = _field_types()
    unknown = sorted(set(values) - set(kinds))
    if unknown:
        raise ConfigError(f"unknown setting(s) {unknown} in {source}; known: {sorted(kinds)}")
    parsed = {name: _parse(name, kinds[name], raw, source) for name, raw in values.items()}
    merged: dict[str, Any] = {f.name: f.default for f in fields(Settings)} | parsed
    _check(merged)
    return Settings(**merged)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add a ``--flag`` for every CLI-visible setting (default ``None`` = not given)."""
    for f in fields(Settings):
        if not f.metadata.get("cli", True):
            continue
        flag = "--" + f.name.replace("_", "-")
        parser.add_argument(flag, dest=f.name, default=None, help=f.metadata["help"])


def load_settings(
    cli: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    config_file: str | os.PathLike[str] | None = None,
) -> Settings:
    """Merge the sources in order of precedence; raise ConfigError on any bad value."""
    environ = os.environ if environ is None else environ
    kinds = _field_types()
    cli_values = {k: v for k, v in (cli or {}).items() if k in kinds and v is not None}
    env_values = {
        name: environ[ENV_PREFIX + name.upper()]
        for name in kinds
        if ENV_PREFIX + name.upper() in environ
    }
    path = config_file or cli_values.get("config") or env_values.get("config")
    file_values: dict[str, Any] = {}
    if path:
        try:
            file_values = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"settings file {path} does not exist") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"settings file {path} is not valid TOML: {exc}") from None
        file_values = dict(file_values.get("remote_support", file_values))
    # Validate each source on its own so the error names where the bad value came from.
    for values, source in ((file_values, f"file {path}"), (env_values, "environment"),
                           (cli_values, "command line")):
        _build(values, source)
    return _build({**file_values, **env_values, **cli_values}, "settings")

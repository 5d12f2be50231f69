"""Settings: defaults < TOML file < environment < command line, with clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from remote_core.errors import ConfigError
from remote_core.settings import Settings, load_settings


def test_defaults_match_the_contract() -> None:
    s = load_settings(environ={})
    assert (s.host, s.port) == ("127.0.0.1", 8080)
    assert s.database_url.startswith("sqlite:///")
    assert s.shared_agent_key is None and s.plugins is None
    assert s.heartbeat_interval == 15 and s.heartbeat_timeout == 45
    assert s.consent_timeout == 60 and s.max_message_bytes == 16 * 1024 * 1024


def test_precedence(tmp_path: Path) -> None:
    cfg = tmp_path / "rs.toml"
    cfg.write_text('port = 9000\nhost = "0.0.0.0"\nlog_level = "debug"\n')
    s = load_settings(cli={"port": "9002"}, environ={"REMOTE_SUPPORT_PORT": "9001",
                                                    "REMOTE_SUPPORT_HOST": "::1"},
                      config_file=cfg)
    assert s.port == 9002 and s.host == "::1" and s.log_level == "debug"


def test_lists_from_environment() -> None:
    s = load_settings(environ={"REMOTE_SUPPORT_PUBLIC_ORIGINS": "https://a, https://b",
                               "REMOTE_SUPPORT_PLUGINS": "store_sql,codec_raw_zstd"})
    assert s.public_origins == ("https://a", "https://b")
    assert s.plugins == ("store_sql", "codec_raw_zstd")


@pytest.mark.parametrize(("env", "message"), [
    ({"REMOTE_SUPPORT_PORT": "eighty"}, r"'port' from environment: expected a number"),
    ({"REMOTE_SUPPORT_PORT": "70000"}, r"'port' must be 0-65535"),
    ({"REMOTE_SUPPORT_AUTOLOAD_PLUGINS": "maybe"}, r"expected true or false"),
    ({"REMOTE_SUPPORT_DATABASE_URL": "remote.db"}, r"must be a URL"),
    ({"REMOTE_SUPPORT_HEARTBEAT_TIMEOUT": "5"}, r"must exceed 'heartbeat_interval'"),
])
def test_bad_values_name_the_setting(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_settings(environ=env)


def test_unknown_key_in_file(tmp_path: Path) -> None:
    cfg = tmp_path / "rs.toml"
    cfg.write_text("prot = 1\n")
    with pytest.raises(ConfigError, match=r"unknown setting\(s\) \['prot'\] in file"):
        load_settings(environ={}, config_file=cfg)


def test_missing_and_invalid_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(environ={}, config_file=tmp_path / "none.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("port = = 1")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(environ={}, config_file=bad)


def test_secrets_are_not_in_repr() -> None:
    s = Settings(shared_agent_key="super-secret", jwt_secret="also-secret")
    assert "secret" not in repr(s).replace("jwt_secret", "")

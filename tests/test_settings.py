"""ServerSettings: defaults < TOML file < environment < command line, with clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from remote_agent.session import Timing
from remote_agent.settings import AgentSettings
from remote_server.settings import ServerSettings
from remote_viewer.settings import ViewerSettings

from remote_core.errors import ConfigError


def test_defaults_match_the_contract() -> None:
    s = ServerSettings.load(environ={})
    assert (s.host, s.port) == ("127.0.0.1", 8080)
    assert s.database_url.startswith("sqlite:///")
    assert s.plugins is None and s.plugin_environ == {} and s.plugin_tables == {}
    assert s.heartbeat_interval == 15 and s.heartbeat_timeout == 45
    assert s.consent_timeout == 60 and s.max_message_bytes == 16 * 1024 * 1024


def test_precedence(tmp_path: Path) -> None:
    cfg = tmp_path / "rs.toml"
    cfg.write_text('port = 9000\nhost = "0.0.0.0"\nlog_level = "debug"\n')
    s = ServerSettings.load(cli={"port": "9002"}, environ={"REMOTE_SUPPORT_PORT": "9001",
                                                    "REMOTE_SUPPORT_HOST": "::1"},
                      config_file=cfg)
    assert s.port == 9002 and s.host == "::1" and s.log_level == "debug"


def test_lists_from_environment() -> None:
    s = ServerSettings.load(environ={"REMOTE_SUPPORT_PUBLIC_ORIGINS": "https://a, https://b",
                               "REMOTE_SUPPORT_PLUGINS": "store_sql,codec_raw_zstd"})
    assert s.public_origins == ("https://a", "https://b")
    assert s.plugins == ("store_sql", "codec_raw_zstd")


@pytest.mark.parametrize(("env", "message"), [
    ({"REMOTE_SUPPORT_PORT": "eighty"}, r"'port' from environment: expected a number"),
    ({"REMOTE_SUPPORT_PORT": "70000"}, r"'port' must be 0-65535"),
    ({"REMOTE_SUPPORT_AUTOLOAD_PLUGINS": "maybe"}, r"expected true or false"),
    ({"REMOTE_SUPPORT_DATABASE_URL": "remote.db"}, r"must be a URL"),
    ({"REMOTE_SUPPORT_HEARTBEAT_TIMEOUT": "5"}, r"must exceed 'heartbeat_interval'"),
    ({"REMOTE_SUPPORT_BUS_URL": "nats://127.0.0.1:4222",
      "REMOTE_SUPPORT_LIMITS_URL": "redis://127.0.0.1:6379/0",
      "REMOTE_SUPPORT_WS_IMPL": "wsproto"}, r"cluster mode \(bus_url\) needs 'ws_impl'"),
])
def test_bad_values_name_the_setting(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ServerSettings.load(environ=env)


def test_unknown_key_in_file(tmp_path: Path) -> None:
    cfg = tmp_path / "rs.toml"
    cfg.write_text("prot = 1\n")
    with pytest.raises(ConfigError, match=r"unknown setting\(s\) \['prot'\] in file"):
        ServerSettings.load(environ={}, config_file=cfg)


def test_missing_and_invalid_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        ServerSettings.load(environ={}, config_file=tmp_path / "none.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("port = = 1")
    with pytest.raises(ConfigError, match="not valid TOML"):
        ServerSettings.load(environ={}, config_file=bad)


def test_secrets_are_not_in_repr() -> None:
    s = ServerSettings.load(environ={"REMOTE_SUPPORT_SHARED_AGENT_KEY": "super-secret",
                                     "REMOTE_SUPPORT_JWT_SECRET": "also-secret",
                                     "REMOTE_SUPPORT_PLUGIN_AUTH_SHAREDKEY_OTHER": "third-secret"})
    assert "secret" not in repr(s).replace("jwt_secret", "").replace("oidc_client_secret", "")


# -- plugin options: a namespace per plugin, and only that reaches its factory -------------

INSTALLED = ("auth_sharedkey", "auth_tokenfile", "codec_h264", "codec_h264_hw")


def test_plugin_options_from_file_and_environment(tmp_path: Path) -> None:
    cfg = tmp_path / "rs.toml"
    cfg.write_text('port = 9000\n'  # flat: TOML allows no list of names beside the tables
                   '[plugins.auth_tokenfile]\nfile = "/etc/tokens.json"\nreload = true\n')
    s = ServerSettings.load(environ={"REMOTE_SUPPORT_PLUGIN_AUTH_TOKENFILE_FILE": "/env.json",
                                     "REMOTE_SUPPORT_PLUGIN_CODEC_H264_HW_DEVICE": "/dev/dri"},
                            config_file=cfg)
    assert s.plugins is None and s.port == 9000
    assert s.plugin_options(INSTALLED) == {
        "auth_tokenfile": {"file": "/env.json", "reload": True},  # the environment wins
        "codec_h264_hw": {"device": "/dev/dri"},  # the longest installed name owns it
    }


def test_plugin_tables_under_the_section_leave_the_plugin_list_alone(tmp_path: Path) -> None:
    cfg = tmp_path / "rs.toml"
    cfg.write_text('[remote_support]\nplugins = ["store_sql"]\n'
                   '[plugins.auth_sharedkey]\nkey = "k"\n')
    s = ServerSettings.load(environ={}, config_file=cfg)
    assert s.plugins == ("store_sql",)
    assert s.plugin_options(INSTALLED) == {"auth_sharedkey": {"key": "k"}}


def test_the_contract_shared_key_variable_is_the_plugin_option() -> None:
    s = ServerSettings.load(environ={"REMOTE_SUPPORT_SHARED_AGENT_KEY": "old"})
    assert s.plugin_options(INSTALLED) == {"auth_sharedkey": {"key": "old"}}
    newer = ServerSettings.load(environ={"REMOTE_SUPPORT_SHARED_AGENT_KEY": "old",
                                         "REMOTE_SUPPORT_PLUGIN_AUTH_SHAREDKEY_KEY": "new"})
    assert newer.plugin_options(INSTALLED) == {"auth_sharedkey": {"key": "new"}}


@pytest.mark.parametrize(("env", "table", "message"), [
    ({"REMOTE_SUPPORT_PLUGIN_AUTH_SHAREDKY_KEY": "x"}, "",
     r"REMOTE_SUPPORT_PLUGIN_AUTH_SHAREDKY_KEY names no installed plugin"),
    ({"REMOTE_SUPPORT_PLUGIN_AUTH_SHAREDKEY": "x"}, "",
     r"names no installed plugin and option"),
    ({}, "[plugins.auth_sharedky]\nkey = 1\n", r"\[plugins.auth_sharedky\] .* not installed"),
])
def test_plugin_options_for_no_installed_plugin_are_an_error(
        tmp_path: Path, env: dict[str, str], table: str, message: str) -> None:
    cfg = tmp_path / "rs.toml"
    cfg.write_text(table)
    s = ServerSettings.load(environ=env, config_file=cfg)
    with pytest.raises(ConfigError, match=message):
        s.plugin_options(INSTALLED)


def test_a_plugin_entry_that_is_not_a_table_is_an_error(tmp_path: Path) -> None:
    cfg = tmp_path / "rs.toml"
    cfg.write_text('[plugins]\nauth_sharedkey = "k"\n')
    with pytest.raises(ConfigError, match=r"plugins.auth_sharedkey must be a table"):
        ServerSettings.load(environ={}, config_file=cfg)


def test_each_program_reads_its_own_variables() -> None:
    environ = {"REMOTE_SUPPORT_HEARTBEAT_INTERVAL": "1", "REMOTE_SUPPORT_HEARTBEAT_TIMEOUT": "3",
               "REMOTE_AGENT_HEARTBEAT_INTERVAL": "2", "REMOTE_AGENT_HEARTBEAT_TIMEOUT": "6",
               "REMOTE_AGENT_STATUS_INTERVAL": "7", "REMOTE_AGENT_CAPTURE": "mss",
               "REMOTE_VIEWER_BLOCK_PLUGINS": "codec_h265"}
    server = ServerSettings.load(environ=environ)
    agent = AgentSettings.load(environ=environ)
    viewer = ViewerSettings.load(environ=environ)
    assert (server.heartbeat_interval, server.heartbeat_timeout) == (1, 3)
    assert agent.timing() == Timing(heartbeat=2, silence=6, status=7)
    assert agent.capture == "mss" and agent.input is None
    assert viewer.block_plugins == ("codec_h265",) and server.block_plugins == ()
    with pytest.raises(ConfigError, match=r"unknown setting\(s\) \['port'\]"):
        AgentSettings.load(environ={}, config_file=_toml("port = 1\n"))
    with pytest.raises(ConfigError, match=r"'heartbeat_timeout' must exceed"):
        AgentSettings.load(environ={"REMOTE_AGENT_HEARTBEAT_TIMEOUT": "10"})


def _toml(text: str) -> Path:
    import tempfile

    handle = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    handle.write(text)
    handle.close()
    return Path(handle.name)

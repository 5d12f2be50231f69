"""The command-line entry points, run as a user would run them."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from remote_core.plugins import BUILTIN_PLUGINS

from .test_plugins import FUTURE, install_fake_distribution


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    exe = shutil.which(args[0])
    assert exe, f"{args[0]} is not installed in this environment"
    return subprocess.run([exe, *args[1:]], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


def test_plugins_lists_every_builtin() -> None:
    out = run("remote-support", "plugins")
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stdout.splitlines() if line and not line.startswith(" ")]
    loaded, _, not_loaded = "\n".join(lines).partition("installed, not loaded:")
    # Every built-in, and the workspace's opt-in AV1 codec, installed but no default.
    assert ({line.split()[0] for line in lines if not line.endswith(":")}
            == {*BUILTIN_PLUGINS, "codec_av1"})
    assert "web_console        remote-web-console 0.1.0" in loaded
    # Codecs, capture and input run on agents: a server does not load them by default.
    assert "codec_raw_zstd     not requested" in not_loaded


def test_bad_setting_is_a_clear_error_not_a_traceback() -> None:
    out = run("remote-support", "plugins", env={"REMOTE_SUPPORT_PORT": "x"})
    assert out.returncode == 2
    assert "remote-support: error: setting 'port'" in out.stderr
    assert "Traceback" not in out.stderr


def test_entry_points_answer_help() -> None:
    for command in ("remote-support", "remote-agent", "remote-viewer"):
        out = run(command, "--help")
        assert out.returncode == 0, (command, out.stderr)
        assert "usage:" in out.stdout


def test_plugins_says_which_installed_plugin_cannot_load(tmp_path: Path) -> None:
    install_fake_distribution(tmp_path, "remote-codec-future", "remote_codec_future", FUTURE,
                              "codec_future", requires=("remote-core>=1,<2",))
    env = {"PYTHONPATH": str(tmp_path), "REMOTE_SUPPORT_AUTOLOAD_PLUGINS": "1"}
    out = run("remote-support", "plugins", env=env)
    assert out.returncode == 1, out.stderr
    assert ("codec_future       error: remote-codec-future 1.2.3 is built for "
            "remote-core<2,>=1; this is remote-core 0.1.0") in out.stdout
    assert "remote-codec-raw-zstd 0.1.0" in out.stdout and "Traceback" not in out.stderr
    named = run("remote-support", "plugins",
                env={"PYTHONPATH": str(tmp_path), "REMOTE_SUPPORT_PLUGINS": "codec_future"})
    assert named.returncode != 0 and "is built for remote-core<2,>=1" in named.stderr
    assert "Traceback" not in named.stderr


def test_the_agent_takes_any_methods_credential_but_not_a_support_code_as_a_key() -> None:
    # A plugin's own credential (not cak_) is a key like any other; a support code given
    # as --key is a mix-up, said at once.
    out = run("remote-agent", "--server", "http://127.0.0.1:9", "--key", "abc-def-ghj")
    assert out.returncode == 2 and "--key was given a support code" in out.stderr


def test_a_plugin_set_that_cannot_serve_ends_start_up_in_one_line(tmp_path: Path) -> None:
    """Configuration errors stop ``serve`` before it binds, with exit status 2."""
    db = {"REMOTE_SUPPORT_DATABASE_URL": f"sqlite:///{tmp_path / 'never.db'}",
          "REMOTE_SUPPORT_PORT": "0"}
    for env, said in [
        ({"REMOTE_SUPPORT_PLUGINS": ""}, "REMOTE_SUPPORT_PLUGINS is empty"),
        ({"REMOTE_SUPPORT_PLUGINS": "auth_agentkey,web_console"},
         "no storage plugin handles database URLs of scheme 'sqlite'"),
        ({"REMOTE_SUPPORT_BLOCK_PLUGINS": "auth_sharedky"},
         "['auth_sharedky'] named in REMOTE_SUPPORT_BLOCK_PLUGINS are not installed"),
        ({"REMOTE_SUPPORT_PLUGIN_AUTH_SHAREDKY_KEY": "k"},
         "REMOTE_SUPPORT_PLUGIN_AUTH_SHAREDKY_KEY names no installed plugin"),
    ]:
        out = run("remote-support", "serve", env={**db, **env})
        assert out.returncode == 2, (env, out.stderr)
        assert said in out.stderr and "Traceback" not in out.stderr, (env, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert not (tmp_path / "never.db").exists()

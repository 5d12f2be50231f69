"""``remote-support release``: a single-file agent build that runs, reproducibly, signed."""

from __future__ import annotations

import stat
import subprocess
import sys
import zipfile

import pytest
from remote_agent.update_signature import SignatureError, load_public_key, verify_file
from remote_server.cli import main
from remote_server.release import (
    build_agent,
    generate_keypair,
    sha256_file,
    sign_file,
    write_atomically,
)

from remote_core.errors import RemoteSupportError


def test_the_build_is_one_runnable_file_stamped_with_its_version(tmp_path):
    built = build_agent(tmp_path / "remote-agent.pyz", "1.2.3-rc.1")
    assert built.sha256 == sha256_file(built.path) and len(built.sha256) == 64
    names = zipfile.ZipFile(built.path).namelist()
    assert "__main__.py" in names and "remote_agent/update.py" in names
    assert "remote_core/protocol/__init__.py" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    run = subprocess.run([sys.executable, str(built.path), "--version"], capture_output=True,
                         text=True, timeout=60, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "1.2.3-rc.1"


def test_builds_are_reproducible(tmp_path):
    first = build_agent(tmp_path / "a.pyz", "1.0.0")
    second = build_agent(tmp_path / "b.pyz", "1.0.0")
    assert first.sha256 == second.sha256
    assert build_agent(tmp_path / "c.pyz", "1.0.1").sha256 != first.sha256


def test_a_version_that_is_not_semver_is_refused(tmp_path):
    with pytest.raises(RemoteSupportError, match="not a semantic version"):
        build_agent(tmp_path / "a.pyz", "1.0")
    assert not list(tmp_path.iterdir())


def test_cli_build_prints_the_checksum(tmp_path, capsys):
    target = tmp_path / "out" / "agent.pyz"
    assert main(["release", "build", "--version", "2.0.0", "--output", str(target)]) == 0
    out = capsys.readouterr().out
    assert f"sha256 {sha256_file(target)}" in out and "remote-agent 2.0.0" in out


def test_keygen_and_sign_make_what_the_agent_verifies(tmp_path, capsys):
    key = tmp_path / "keys" / "publisher.pem"
    assert main(["release", "keygen", "--private-key", str(key)]) == 0
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    line = next(x for x in capsys.readouterr().out.splitlines()
                if x.startswith("update_public_key"))
    public = line.split('"')[1]
    built = build_agent(tmp_path / "agent.pyz", "1.0.1")
    assert main(["release", "sign", str(built.path), "--private-key", str(key)]) == 0
    signature = built.path.with_name("agent.pyz.sig").read_bytes()
    verify_file(load_public_key(public), built.path, signature)
    built.path.write_bytes(built.path.read_bytes() + b"tampered")
    with pytest.raises(SignatureError):
        verify_file(load_public_key(public), built.path, signature)


def test_keygen_never_overwrites_a_key(tmp_path, capsys):
    key = tmp_path / "publisher.pem"
    generate_keypair(key)
    before = key.read_bytes()
    assert main(["release", "keygen", "--private-key", str(key)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err
    assert key.read_bytes() == before


def test_signing_with_something_else_than_an_ed25519_key_is_a_clear_error(tmp_path):
    bogus = tmp_path / "bogus.pem"
    bogus.write_text("not a key")
    with pytest.raises(RemoteSupportError, match="cannot read the signing key"):
        sign_file(bogus, bogus)


def test_a_build_that_fails_midway_leaves_no_partial_file(tmp_path):
    def broken(archive: zipfile.ZipFile) -> None:
        archive.writestr("__main__.py", b"")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_atomically(tmp_path / "remote-agent.pyz", "/usr/bin/env python3", broken)
    assert not list(tmp_path.iterdir())


def test_the_code_only_build_holds_no_test_code(tmp_path):
    names = zipfile.ZipFile(build_agent(tmp_path / "a.pyz", "1.0.0").path).namelist()
    assert not [n for n in names if n.startswith("remote_core/testing/")]


def test_plugins_without_wheels_are_refused(tmp_path, capsys):
    assert main(["release", "build", "--plugins", "codec_h264", "--output",
                 str(tmp_path / "a.pyz")]) == 2
    assert "--plugins needs --wheels" in capsys.readouterr().err

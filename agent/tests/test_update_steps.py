"""The update steps against a real HTTPS server with a test CA: what installs, what fails, why.

The "agent" here is an :class:`Updater` over a real file in a temporary
directory; the end-to-end tests run the same code inside real agent processes.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import logging
import subprocess
import sys
import zipfile

import anyio
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from remote_agent.config import AgentConfig
from remote_agent.update import Offer, Updater
from remote_agent.update_download import DownloadError, fetch_small, tls_context
from remote_agent.update_files import UpdateFiles

from remote_core.protocol import pb
from remote_core.testing.release_server import ReleaseServer, Route


def build(version: str, main: str = "") -> bytes:
    """A zip application that answers ``--version`` as a release build does."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("__main__.py", main or f"print({version!r})\n")
    return buffer.getvalue()


OLD, NEW = build("1.0.0"), build("1.0.1")
NEW_SHA = hashlib.sha256(NEW).hexdigest()


@pytest.fixture
def releases(tmp_path):
    with ReleaseServer(tmp_path / "releases") as server:
        yield server


@pytest.fixture
def artifact(tmp_path):
    path = tmp_path / "agent" / "remote-agent.pyz"
    path.parent.mkdir()
    path.write_bytes(OLD)
    return path


class Reports(list):
    async def __call__(self, status):
        self.append(status)

    @property
    def states(self):
        return [pb.UpdateState.Name(s.state) for s in self]


def updater(artifact, releases, **config):
    config = AgentConfig(server="http://127.0.0.1:9", ca_bundle=str(releases.ca_bundle),
                         **config)
    return Updater(config, artifact, current="1.0.0", retry_delay=0.01)


async def failure(artifact, releases, offer, **config) -> str:
    """Run ``offer``; assert it failed and left the old build alone; the reported reason."""
    reports = Reports()
    assert await updater(artifact, releases, **config).run(offer, reports) is False
    assert reports.states[0] == "UPDATE_CHECKING"
    assert reports.states[-1] == "UPDATE_FAILED"
    assert artifact.read_bytes() == OLD
    assert sorted(p.name for p in artifact.parent.iterdir()) == ["remote-agent.pyz"]
    return reports[-1].error_message


@pytest.mark.anyio
async def test_a_newer_verified_release_replaces_the_file_and_keeps_the_previous(
        artifact, releases):
    url = releases.publish("remote-agent-1.0.1.pyz", Route(NEW))
    reports = Reports()
    agent = updater(artifact, releases)
    assert await agent.run(Offer("1.0.1", url, NEW_SHA), reports) is True
    assert artifact.read_bytes() == NEW
    assert artifact.with_name("remote-agent.pyz.previous").read_bytes() == OLD
    states = reports.states
    assert states[:2] == ["UPDATE_CHECKING", "UPDATE_DOWNLOADING"]
    assert states[-3:] == ["UPDATE_VERIFYING", "UPDATE_INSTALLING", "UPDATE_RESTARTING"]
    progress = [s.progress_percent for s in reports if s.state == pb.UPDATE_DOWNLOADING]
    assert progress[0] == 0 and progress[-1] == 100 and progress == sorted(progress)
    assert json.loads(agent.files.marker.read_text()) == {"from": "1.0.0", "to": "1.0.1"}

    # The restarted process (now 1.0.1) cleans up and reports COMPLETE once connected.
    after = Updater(AgentConfig(), artifact, current="1.0.1")
    after.finish_restart(post_update=True)
    reports = Reports()
    await after.connected(reports)
    assert reports.states == ["UPDATE_COMPLETE"] and reports[0].current_version == "1.0.1"
    assert not after.files.marker.exists() and not after.files.staging.exists()
    assert after.files.previous.exists()  # kept for rollback
    await after.connected(reports)
    assert len(reports) == 1  # reported once


@pytest.mark.anyio
async def test_an_installed_update_restarts_even_when_the_restart_cannot_be_reported(
        artifact, releases):
    # The connection broke while the build was being installed: the report fails, and the
    # agent must still restart into what is on disk, not run the old build beside it.
    url = releases.publish("a.pyz", Route(NEW))
    reports = Reports()

    async def lost_at_restart(status):
        if status.state == pb.UPDATE_RESTARTING:
            raise ConnectionError("the server went away")
        await reports(status)

    agent = updater(artifact, releases)
    assert await agent.run(Offer("1.0.1", url, NEW_SHA), lost_at_restart) is True
    assert agent.installed == "1.0.1" and artifact.read_bytes() == NEW
    assert reports.states[-1] == "UPDATE_INSTALLING"


@pytest.mark.anyio
async def test_restarted_on_the_old_build_reports_failure(artifact, releases):
    url = releases.publish("a.pyz", Route(NEW))
    await updater(artifact, releases).run(Offer("1.0.1", url, NEW_SHA), Reports())
    after = Updater(AgentConfig(), artifact, current="1.0.0")
    after.finish_restart(post_update=True)
    reports = Reports()
    await after.connected(reports)
    assert reports.states == ["UPDATE_FAILED"]
    assert reports[0].error_message == "the update to 1.0.1 did not take effect; running 1.0.0"


@pytest.mark.anyio
async def test_wrong_checksum(artifact, releases):
    url = releases.publish("a.pyz", Route(NEW))
    message = await failure(artifact, releases, Offer("1.0.1", url, "0" * 64))
    assert message.startswith("checksum mismatch") and NEW_SHA in message


@pytest.mark.anyio
async def test_html_error_page_with_status_200(artifact, releases):
    url = releases.publish("a.pyz", Route(b"<html>Service down</html>", content_type="text/html"))
    message = await failure(artifact, releases, Offer("1.0.1", url, NEW_SHA))
    assert message == "the server answered with an HTML page, not the release"


@pytest.mark.anyio
async def test_not_found(artifact, releases):
    message = await failure(artifact, releases, Offer("1.0.1", releases.url("gone.pyz"), NEW_SHA))
    assert message == "download failed: HTTP 404 Not Found"
    assert releases.hits["/gone.pyz"] == 1  # a 404 is not retried


@pytest.mark.anyio
async def test_truncated_body_is_retried_a_bounded_number_of_times(artifact, releases):
    url = releases.publish("a.pyz", Route(NEW, cut_after=len(NEW) // 2))
    message = await failure(artifact, releases, Offer("1.0.1", url, NEW_SHA))
    assert message.startswith("download incomplete") and "gave up after 3 attempts" in message
    assert releases.hits["/a.pyz"] == 3


@pytest.mark.anyio
async def test_plain_http_is_refused_before_connecting(artifact, releases):
    message = await failure(artifact, releases,
                            Offer("1.0.1", "http://127.0.0.1:9/a.pyz", NEW_SHA))
    assert message == "refused http://127.0.0.1:9/a.pyz: updates are downloaded over HTTPS only"


@pytest.mark.anyio
async def test_a_redirect_must_stay_on_https(artifact, releases):
    releases.publish("new.pyz", Route(NEW))
    moved = releases.publish("moved.pyz", Route(b"", status=302, location=releases.url("new.pyz")))
    assert await updater(artifact, releases).run(Offer("1.0.1", moved, NEW_SHA), Reports())
    files = UpdateFiles(artifact)  # back to a plain 1.0.0 install
    files.clean()
    files.previous.unlink()
    artifact.write_bytes(OLD)
    down = releases.publish("down.pyz", Route(b"", status=302,
                                              location="http://127.0.0.1:9/new.pyz"))
    message = await failure(artifact, releases, Offer("1.0.2", down, NEW_SHA))
    assert message == ("refused http://127.0.0.1:9/new.pyz: updates are downloaded over "
                       "HTTPS only")


@pytest.mark.anyio
async def test_untrusted_certificate(artifact, releases, tmp_path):
    with ReleaseServer(tmp_path / "other") as stranger:  # its CA is not the agent's
        url = stranger.publish("a.pyz", Route(NEW))
        message = await failure(artifact, releases, Offer("1.0.1", url, NEW_SHA))
    assert message.startswith("TLS certificate not trusted")


@pytest.mark.anyio
@pytest.mark.parametrize("version", ["0.9.0", "1.0.0", "1.0.0+rebuild", "1.0.0-rc.1"])
async def test_never_a_downgrade_or_the_same_version(artifact, releases, version):
    url = releases.publish("a.pyz", Route(NEW))
    message = await failure(artifact, releases, Offer(version, url, NEW_SHA))
    assert message == f"{version} is not newer than the running 1.0.0; agents never downgrade"
    assert releases.hits["/a.pyz"] == 0


@pytest.mark.anyio
async def test_not_a_build(artifact, releases):
    body = b"just bytes, not a zip application"
    url = releases.publish("a.pyz", Route(body))
    message = await failure(artifact, releases,
                            Offer("1.0.1", url, hashlib.sha256(body).hexdigest()))
    assert message.startswith("the download is not an agent build")


@pytest.mark.anyio
async def test_a_build_that_is_not_the_promised_version(artifact, releases):
    """Installed, it would restart as 1.0.1 and be offered 1.0.2 again at every poll."""
    url = releases.publish("a.pyz", Route(NEW))
    message = await failure(artifact, releases, Offer("1.0.2", url, NEW_SHA))
    assert message == "the download is version '1.0.1', not 1.0.2"


@pytest.mark.anyio
async def test_a_build_that_does_not_start(artifact, releases):
    body = build("1.0.1", main="raise SystemExit('ImportError: no module named remote_agent')")
    url = releases.publish("a.pyz", Route(body))
    message = await failure(artifact, releases,
                            Offer("1.0.1", url, hashlib.sha256(body).hexdigest()))
    assert message == "the new build does not start: ImportError: no module named remote_agent"


@pytest.mark.anyio
async def test_attended_and_source_installs_do_not_update(artifact, releases):
    url = releases.publish("a.pyz", Route(NEW))
    reports = Reports()
    attended = Updater(AgentConfig(), artifact, current="1.0.0", attended=True)
    assert await attended.run(Offer("1.0.1", url, NEW_SHA), reports) is False
    source = Updater(AgentConfig(), None, current="1.0.0")
    assert await source.run(Offer("1.0.1", url, NEW_SHA), reports) is False
    assert "attended" in reports[1].error_message
    assert "does not run from a release build" in reports[3].error_message
    assert releases.hits["/a.pyz"] == 0


def signing_key():
    key = Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes(serialization.Encoding.Raw,
                                           serialization.PublicFormat.Raw)
    return key, base64.b64encode(public).decode()


@pytest.mark.anyio
async def test_signed_release_installs_when_the_key_is_pinned(artifact, releases):
    key, public = signing_key()
    url = releases.publish("a.pyz", Route(NEW))
    releases.publish("a.pyz.sig", Route(base64.b64encode(key.sign(NEW))))
    agent = updater(artifact, releases, update_public_key=public)
    assert await agent.run(Offer("1.0.1", url, NEW_SHA), Reports()) is True
    assert artifact.read_bytes() == NEW


@pytest.mark.anyio
async def test_bad_signature_when_signing_is_on(artifact, releases):
    _, public = signing_key()
    impostor, _ = signing_key()  # a compromised server: right checksum, wrong signer
    url = releases.publish("a.pyz", Route(NEW))
    releases.publish("a.pyz.sig", Route(base64.b64encode(impostor.sign(NEW))))
    message = await failure(artifact, releases, Offer("1.0.1", url, NEW_SHA),
                            update_public_key=public)
    assert message == "the release signature does not match the pinned publisher key"


@pytest.mark.anyio
async def test_missing_signature_when_signing_is_on(artifact, releases):
    _, public = signing_key()
    url = releases.publish("a.pyz", Route(NEW))
    message = await failure(artifact, releases, Offer("1.0.1", url, NEW_SHA),
                            update_public_key=public)
    assert message.startswith("the release signature could not be fetched")


@pytest.mark.anyio
async def test_the_poll_offers_only_newer_releases_that_have_not_failed_here(
        artifact, releases):
    url = releases.publish("a.pyz", Route(NEW))
    agent = Updater(AgentConfig(server=releases.url(""), ca_bundle=str(releases.ca_bundle)),
                    artifact, current="1.0.0", retry_delay=0.01)

    def newest(version, checksum=NEW_SHA):
        body = json.dumps({"version": version, "download_url": url,
                           "checksum_sha256": checksum, "mandatory": False})
        releases.publish("api/version", Route(body.encode(), content_type="application/json"))

    assert await agent.check() is None  # 404: no release published
    newest("0.9.0")
    assert await agent.check() is None
    newest("1.0.1-rc.1")
    assert await agent.check() == Offer("1.0.1-rc.1", url, NEW_SHA)
    newest("1.0.1", "0" * 64)
    offer = await agent.check()
    assert offer is not None and not await agent.run(offer, Reports())
    assert await agent.check() is None  # failed here once: no update loop
    assert releases.hits["/a.pyz"] == 1


@pytest.mark.anyio
async def test_a_failed_poll_is_a_warning_and_no_release_is_not(artifact, releases, caplog):
    agent = Updater(AgentConfig(server=releases.url(""), ca_bundle=str(releases.ca_bundle)),
                    artifact, current="1.0.0")
    caplog.set_level(logging.DEBUG, logger="remote_agent.update")
    assert await agent.check() is None  # 404: the server has no release, nothing is wrong
    assert [r.levelno for r in caplog.records] == [logging.DEBUG]
    caplog.clear()
    releases.publish("api/version", Route(b"busy", status=503))
    assert await agent.check() is None
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.WARNING, "update check failed: download failed: HTTP 503 Service Unavailable")]


@pytest.mark.anyio
async def test_the_poll_names_the_agents_channel_with_its_key_and_no_redirect_carries_it(
        artifact, releases):
    """The key goes to the server's own /api/version (it picks the tenant's release
    channel), never on to where a redirect points."""
    answer = json.dumps({"version": "1.0.1", "download_url": releases.url("a.pyz"),
                         "checksum_sha256": NEW_SHA, "mandatory": False}).encode()
    releases.publish("api/version", Route(answer, content_type="application/json"))
    keyed = Updater(AgentConfig(server=releases.url(""), ca_bundle=str(releases.ca_bundle),
                                key="cak_the-agents-own-key"), artifact, current="1.0.0")
    assert (await keyed.check()).version == "1.0.1"
    assert releases.authorizations["/api/version"] == ["Bearer cak_the-agents-own-key"]
    releases.publish("api/version", Route(b"", status=302, location=releases.url("elsewhere")))
    releases.publish("elsewhere", Route(answer, content_type="application/json"))
    assert (await keyed.check()).version == "1.0.1"
    assert releases.authorizations["/elsewhere"] == [""]
    unkeyed = Updater(AgentConfig(server=releases.url(""), ca_bundle=str(releases.ca_bundle)),
                      artifact, current="1.0.0")
    await unkeyed.check()
    assert releases.authorizations["/api/version"][-1] == ""


def test_ca_bundle_adds_to_the_system_roots(tmp_path, releases, monkeypatch):
    """A host certified by the system's roots and one by the bundle's are both trusted;
    a host certified by neither is not. ``SSL_CERT_FILE`` stands for the system's roots."""
    with ReleaseServer(tmp_path / "public") as public, \
            ReleaseServer(tmp_path / "stranger") as stranger:
        monkeypatch.setenv("SSL_CERT_FILE", str(public.ca_bundle))
        context = tls_context(str(releases.ca_bundle))
        for host in (public, releases):
            host.publish("doc", Route(b"trusted"))
            assert fetch_small(host.url("doc"), context) == b"trusted"
        stranger.publish("doc", Route(b"no"))
        with pytest.raises(DownloadError, match="TLS certificate not trusted"):
            fetch_small(stranger.url("doc"), context)
    with pytest.raises(DownloadError, match=r"ca_bundle .* cannot be used"):
        tls_context(str(tmp_path / "missing.pem"))


_CRASH_AT = """
import os, signal, sys
from pathlib import Path
from remote_agent.update_files import UpdateFiles

crash_at, calls = int(sys.argv[2]), 0

def step(call):
    def wrapped(*args, **kwargs):
        global calls
        if calls == crash_at:
            os.kill(os.getpid(), signal.SIGKILL)
        calls += 1
        return call(*args, **kwargs)
    return wrapped

for name in ("chmod", "unlink", "link", "fsync", "replace"):
    setattr(os, name, step(getattr(os, name)))
Path.write_text = step(Path.write_text)
UpdateFiles(Path(sys.argv[1])).install("1.0.0", "1.0.1")
print(calls)
"""


@pytest.mark.parametrize("crash_at", range(8))
def test_killed_at_any_step_of_the_install_the_file_is_old_or_new(tmp_path, crash_at):
    """SIGKILL before each file-system call of the install, in a real child process."""
    artifact = tmp_path / "remote-agent.pyz"
    artifact.write_bytes(OLD)
    files = UpdateFiles(artifact)
    files.staging.write_bytes(NEW)
    run = subprocess.run([sys.executable, "-c", _CRASH_AT, str(artifact), str(crash_at)],
                         capture_output=True, text=True, timeout=60)
    completed = run.returncode == 0
    assert completed or run.returncode == -9, run.stderr
    running = {OLD: "1.0.0", NEW: "1.0.1"}[artifact.read_bytes()]  # whole, never neither
    if completed:
        assert running == "1.0.1" and files.previous.read_bytes() == OLD
    # Started again (by the service manager), the agent cleans up and tells what happened.
    after = Updater(AgentConfig(), artifact, current=running)
    after.finish_restart(post_update=False)
    reports = Reports()
    anyio.run(after.connected, reports)
    assert not files.staging.exists() and not files.marker.exists()
    if running == "1.0.1":
        assert reports.states == ["UPDATE_COMPLETE"]
    else:
        assert reports.states in ([], ["UPDATE_FAILED"])


def test_the_install_has_seven_steps(tmp_path):
    """Keeps the crash test above covering every step when the install changes."""
    artifact = tmp_path / "remote-agent.pyz"
    artifact.write_bytes(OLD)
    UpdateFiles(artifact).staging.write_bytes(NEW)
    run = subprocess.run([sys.executable, "-c", _CRASH_AT, str(artifact), "99"],
                         capture_output=True, text=True, timeout=60, check=True)
    assert int(run.stdout) == 7


def test_rollback_puts_the_previous_build_back(tmp_path, capsys):
    from remote_agent.cli import main

    artifact = tmp_path / "remote-agent.pyz"
    artifact.write_bytes(OLD)
    files = UpdateFiles(artifact)
    files.staging.write_bytes(NEW)
    files.install("1.0.0", "1.0.1")
    assert main(["rollback", str(artifact)]) == 0
    assert artifact.read_bytes() == OLD and not files.previous.exists()
    assert main(["rollback", str(artifact)]) == 2  # nothing kept any more
    assert "no previous build" in capsys.readouterr().err
    assert artifact.read_bytes() == OLD

"""Self-update end to end: a real server, a release record, an HTTPS host with a test CA,
and an agent genuinely running from its single-file build (1.0.0) that becomes 1.0.1.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import anyio
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from remote_agent.config import AgentConfig
from remote_server.release import Artifact, build_agent, sha256_file
from remote_server.testing.deviations import shortened_timeouts
from remote_server.testing.processes import BIN, Api, ServerProcess, settings_env, stop_process

from remote_core.testing.release_server import ReleaseServer, Route

pytestmark = [pytest.mark.xvfb, pytest.mark.slow]


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> dict[str, Artifact]:
    out = tmp_path_factory.mktemp("builds")
    return {v: build_agent(out / f"remote-agent-{v}.pyz", v) for v in ("1.0.0", "1.0.1")}


@pytest.fixture
def server(tmp_path):
    process = ServerProcess(tmp_path / "server").start()
    yield process
    process.stop()


@pytest.fixture
def api(server):
    client = Api(server)
    yield client
    client.close()


@pytest.fixture
def releases(tmp_path):
    with ReleaseServer(tmp_path / "releases") as host:
        yield host


class Publisher:
    """The release publisher's Ed25519 key; agents pin its public half."""

    def __init__(self) -> None:
        self.key = Ed25519PrivateKey.generate()
        raw = self.key.public_key().public_bytes(serialization.Encoding.Raw,
                                                 serialization.PublicFormat.Raw)
        self.public = base64.b64encode(raw).decode()

    def publish(self, host: ReleaseServer, name: str, route: Route,
                signed: bytes | None = None) -> str:
        """Serve ``route`` at ``name`` and its signature (over ``signed`` or the body)."""
        signature = self.key.sign(route.body if signed is None else signed)
        host.publish(name + ".sig", Route(base64.b64encode(signature)))
        return host.publish(name, route)


class ArtifactAgent:
    """``python remote-agent.pyz --server ... --key ...``: the agent as a release build runs."""

    def __init__(self, home: Path, display: str, build: Path, server: str, key: str,
                 config: AgentConfig, **env: str) -> None:
        self.home = home
        self.artifact = home / "bin" / "remote-agent.pyz"
        if not self.artifact.exists():
            self.artifact.parent.mkdir(parents=True)
            shutil.copy(build, self.artifact)
            config.save(home / "config" / "remote-agent" / "agent.toml")
        self.log = home / "agent.log"
        self.argv = [sys.executable, str(self.artifact), "--server", server, "--key", key]
        self.env = {**os.environ, "DISPLAY": display, "XDG_CONFIG_HOME": str(home / "config"),
                    "HOME": str(home), **env}
        self.env.pop("REMOTE_SUPPORT_PORT", None)
        self.process = self.start()

    def start(self) -> subprocess.Popen[bytes]:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(self.argv, env=self.env, stdout=log, stderr=log)
        return self.process

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        stop_process(self.process)


def wait_for(what, predicate, agent: ArtifactAgent | StartedAgent, within: float = 40.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen; agent log:\n{agent.output()}")


def update_events(api: Api, agent_id: str) -> list[dict]:
    """The agent's ``UpdateStatus`` reports as the server recorded them, oldest first."""
    r = api.get("/api/events", params={"agent_id": agent_id, "limit": 1000})
    r.raise_for_status()
    return [e["detail"] for e in reversed(r.json()) if e["kind"] == "agent.update_status"]


def reported(api: Api, agent_id: str, state: str) -> list[dict]:
    return [e for e in update_events(api, agent_id) if e["state"] == state]


def online_at(api: Api, agent_id: str, version: str) -> bool:
    machine = api.machine(agent_id)
    return bool(machine and machine["status"] == "online" and machine["agent_version"] == version
                and machine["session_id"])


def release(api: Api, version: str, url: str, checksum: str, mandatory: bool = False) -> None:
    r = api.post("/api/releases", json={"version": version, "download_url": url,
                                        "checksum_sha256": checksum, "mandatory": mandatory})
    assert r.status_code == 201, r.text


def start_agent(tmp_path, x_display, builds, server, api, releases, publisher=None, **env):
    agent_id, key = api.machine_with_key()
    config = AgentConfig(ca_bundle=str(releases.ca_bundle),
                         update_public_key=publisher.public if publisher else "")
    agent = ArtifactAgent(tmp_path / "agent", x_display.display, builds["1.0.0"].path,
                          server.url, key, config, **env)
    wait_for("the 1.0.0 agent online", lambda: online_at(api, agent_id, "1.0.0"), agent)
    return agent_id, agent


def assert_updated(api, agent_id, agent, builds, pid):
    wait_for("agent_version 1.0.1", lambda: online_at(api, agent_id, "1.0.1"), agent)
    wait_for("UPDATE_COMPLETE", lambda: reported(api, agent_id, "UPDATE_COMPLETE"), agent)
    states = [e["state"] for e in update_events(api, agent_id)]
    assert states[:2] == ["UPDATE_CHECKING", "UPDATE_DOWNLOADING"]
    assert states[-4:] == ["UPDATE_VERIFYING", "UPDATE_INSTALLING", "UPDATE_RESTARTING",
                           "UPDATE_COMPLETE"]
    completed = update_events(api, agent_id)[-1]
    assert completed["version"] == "1.0.1" and completed["error"] == ""
    assert agent.process.poll() is None and agent.process.pid == pid  # replaced in place
    assert agent.artifact.read_bytes() == builds["1.0.1"].path.read_bytes()
    previous = agent.artifact.with_name("remote-agent.pyz.previous")
    assert previous.read_bytes() == builds["1.0.0"].path.read_bytes()
    assert sorted(p.name for p in agent.artifact.parent.iterdir()) == [
        "remote-agent.pyz", "remote-agent.pyz.previous"]


def test_push_updates_a_signed_release(tmp_path, x_display, builds, server, api, releases):
    publisher = Publisher()
    url = publisher.publish(releases, "remote-agent-1.0.1.pyz",
                            Route(builds["1.0.1"].path.read_bytes()))
    release(api, "1.0.1", url, builds["1.0.1"].sha256)
    agent_id, agent = start_agent(tmp_path, x_display, builds, server, api, releases, publisher)
    try:
        pid = agent.process.pid
        r = api.post(f"/api/machines/{agent_id}/update", json={"version": "1.0.1"})
        assert r.status_code == 202, r.text
        assert_updated(api, agent_id, agent, builds, pid)
    finally:
        agent.stop()


def test_poll_finds_the_newer_release(tmp_path, x_display, builds, server, api, releases):
    agent_id, agent = start_agent(tmp_path, x_display, builds, server, api, releases,
                                  REMOTE_AGENT_UPDATE_INTERVAL="1")
    try:
        pid = agent.process.pid
        time.sleep(2)  # polls that find nothing change nothing
        assert update_events(api, agent_id) == []
        url = releases.publish("remote-agent-1.0.1.pyz", Route(builds["1.0.1"].path.read_bytes()))
        release(api, "1.0.1", url, builds["1.0.1"].sha256)
        assert_updated(api, agent_id, agent, builds, pid)
        hits = releases.hits["/remote-agent-1.0.1.pyz"]
        time.sleep(3)  # 1.0.1 polling finds 1.0.1: nothing newer, no loop
        assert releases.hits["/remote-agent-1.0.1.pyz"] == hits == 1
    finally:
        agent.stop()


def test_failed_updates_leave_the_old_agent_running(tmp_path, x_display, builds, server, api,
                                                    releases):
    publisher = Publisher()
    new = builds["1.0.1"].path.read_bytes()
    with ReleaseServer(tmp_path / "stranger") as stranger:
        cases = [  # version, url, checksum, the reason the agent must give
            ("1.0.1", publisher.publish(releases, "a.pyz", Route(new)), "0" * 64,
             "checksum mismatch"),
            ("1.0.2", publisher.publish(releases, "b.pyz", Route(
                b"<html>Maintenance</html>", content_type="text/html")), builds["1.0.1"].sha256,
             "the server answered with an HTML page, not the release"),
            ("1.0.3", publisher.publish(releases, "c.pyz", Route(b"", status=404), signed=new),
             builds["1.0.1"].sha256, "download failed: HTTP 404"),
            ("1.0.4", publisher.publish(releases, "d.pyz", Route(new, cut_after=1000)),
             builds["1.0.1"].sha256, "download incomplete: 1000 of"),
            ("1.0.5", stranger.publish("e.pyz", Route(new)), builds["1.0.1"].sha256,
             "could not be fetched: TLS certificate not trusted"),
            ("1.0.6", Publisher().publish(releases, "f.pyz", Route(new)), builds["1.0.1"].sha256,
             "the release signature does not match the pinned publisher key"),
            ("0.9.0", publisher.publish(releases, "g.pyz", Route(new)), builds["1.0.1"].sha256,
             "0.9.0 is not newer than the running 1.0.0; agents never downgrade"),
        ]
        r = api.post("/api/releases", json={"version": "1.0.7", "checksum_sha256": "0" * 64,
                                            "download_url": "http://127.0.0.1/h.pyz"})
        assert r.status_code == 422  # plain http never becomes a release (the agent refuses too)
        for version, url, checksum, _ in cases:
            release(api, version, url, checksum)
        agent_id, agent = start_agent(tmp_path, x_display, builds, server, api, releases,
                                      publisher)
        try:
            pid = agent.process.pid
            for count, (version, _, _, reason) in enumerate(cases, start=1):
                r = api.post(f"/api/machines/{agent_id}/update", json={"version": version})
                assert r.status_code == 202, r.text
                wait_for(f"UPDATE_FAILED for {version}",
                         lambda n=count: len(reported(api, agent_id, "UPDATE_FAILED")) >= n,
                         agent)
                failures = reported(api, agent_id, "UPDATE_FAILED")
                assert reason in failures[-1]["error"], (version, failures[-1])
                assert failures[-1]["version"] == "1.0.0"
            assert releases.hits["/d.pyz"] == 3  # a cut-off body: bounded retries
            assert agent.process.poll() is None and agent.process.pid == pid
            assert online_at(api, agent_id, "1.0.0")
            assert agent.artifact.read_bytes() == builds["1.0.0"].path.read_bytes()
            assert [p.name for p in agent.artifact.parent.iterdir()] == ["remote-agent.pyz"]
            assert not [e for e in update_events(api, agent_id)
                        if e["state"] in ("UPDATE_INSTALLING", "UPDATE_COMPLETE")]
        finally:
            agent.stop()


def built_version(path: Path, builds: dict[str, Artifact]) -> str | None:
    data = path.read_bytes()
    return next((v for v, b in builds.items() if b.path.read_bytes() == data), None)


@pytest.mark.parametrize("moment", ["UPDATE_DOWNLOADING", "UPDATE_INSTALLING"])
def test_killed_mid_update_comes_back_old_or_new(tmp_path, x_display, builds, server, api,
                                                 releases, moment):
    new = builds["1.0.1"].path.read_bytes()
    slow = moment == "UPDATE_DOWNLOADING"
    url = releases.publish("remote-agent-1.0.1.pyz",
                           Route(new, seconds_per_chunk=0.1 if slow else 0.0))
    release(api, "1.0.1", url, builds["1.0.1"].sha256)
    agent_id, agent = start_agent(tmp_path, x_display, builds, server, api, releases)
    try:
        r = api.post(f"/api/machines/{agent_id}/update", json={"version": "1.0.1"})
        assert r.status_code == 202, r.text
        wait_for(moment, lambda: [e for e in reported(api, agent_id, moment)
                                  if not slow or e["progress"] > 0], agent)
        agent.kill()
        found = built_version(agent.artifact, builds)
        assert found in ("1.0.0", "1.0.1")  # whole, never neither
        if slow:
            assert found == "1.0.0"
        # The service manager starts it again: it runs, whichever build is in place.
        agent.start()
        wait_for(f"the agent back online at {found}", lambda: online_at(api, agent_id, found),
                 agent)
        if found == "1.0.1":  # restarted without --post-update, it still reports the outcome
            wait_for("UPDATE_COMPLETE", lambda: reported(api, agent_id, "UPDATE_COMPLETE"),
                     agent)
        leftovers = sorted(p.name for p in agent.artifact.parent.iterdir())
        assert leftovers in (["remote-agent.pyz"], ["remote-agent.pyz",
                                                    "remote-agent.pyz.previous"])
    finally:
        agent.stop()


@pytest.mark.anyio
@pytest.mark.parametrize("mandatory", [False, True])
async def test_a_watched_agent_updates_when_the_viewer_leaves_unless_mandatory(
        tmp_path, x_display, builds, server, api, releases, mandatory):
    from remote_viewer.client import open_viewer

    url = releases.publish("remote-agent-1.0.1.pyz", Route(builds["1.0.1"].path.read_bytes()))
    release(api, "1.0.1", url, builds["1.0.1"].sha256, mandatory=mandatory)
    agent_id, agent = await anyio.to_thread.run_sync(
        lambda: start_agent(tmp_path, x_display, builds, server, api, releases))
    try:
        pid = agent.process.pid
        session = api.live_session(agent_id)
        async with open_viewer(server.url, api.viewer_token(session["id"])) as viewer:
            await viewer.next_frame(15)  # streaming
            r = api.post(f"/api/machines/{agent_id}/update", json={})
            assert r.status_code == 202, r.text
            if mandatory:  # installs at once, the viewer's stream notwithstanding
                await anyio.to_thread.run_sync(
                    assert_updated, api, agent_id, agent, builds, pid)
                return
            await anyio.sleep(3)
            assert update_events(api, agent_id) == []  # waits while someone watches
            await viewer.next_frame(15)
        await anyio.to_thread.run_sync(assert_updated, api, agent_id, agent, builds, pid)
    finally:
        agent.stop()


@pytest.mark.anyio
async def test_plain_http_from_a_server_that_allows_it_is_refused(tmp_path, x_display, builds):
    """The API only stores https releases; a server that sent http anyway is refused too.

    A small WebSocket server plays that server's part of the wire.
    """
    from websockets.asyncio.server import serve

    from remote_core.protocol import pb, wrap

    statuses: list = []
    failed, alive = anyio.Event(), anyio.Event()

    async def handler(ws):
        await ws.recv()  # session_request
        await ws.send(wrap("session_response", pb.SessionResponse(success=True, session_id="s")))
        await ws.send(wrap("update_info", pb.UpdateInfo(
            version="1.0.1", download_url="http://127.0.0.1:9/remote-agent.pyz",
            checksum_sha256=builds["1.0.1"].sha256)))
        await ws.send(wrap("admin_command", pb.AdminCommand(command=pb.ADMIN_UPDATE)))
        async for data in ws:
            message = pb.Message()
            message.ParseFromString(data)
            kind = message.WhichOneof("payload")
            if kind == "update_status":
                statuses.append(message.update_status)
                if message.update_status.state == pb.UPDATE_FAILED:
                    failed.set()
            elif kind == "heartbeat":
                await ws.send(wrap("heartbeat_ack", pb.HeartbeatAck(
                    client_timestamp=message.heartbeat.timestamp)))
                if failed.is_set():
                    alive.set()

    async with serve(handler, "127.0.0.1", 0, compression=None) as ws_server:
        port = ws_server.sockets[0].getsockname()[1]
        agent = ArtifactAgent(tmp_path / "agent", x_display.display, builds["1.0.0"].path,
                              f"http://127.0.0.1:{port}", "cak_test", AgentConfig(),
                              **settings_env(shortened_timeouts(1 / 15)))  # beats every 1 s
        try:
            with anyio.fail_after(30):
                await failed.wait()
                await alive.wait()  # still serving after the refusal
            assert [pb.UpdateState.Name(s.state) for s in statuses] == [
                "UPDATE_CHECKING", "UPDATE_FAILED"]
            assert statuses[-1].error_message == (
                "refused http://127.0.0.1:9/remote-agent.pyz: updates are downloaded over "
                "HTTPS only")
            assert statuses[-1].current_version == "1.0.0"
            assert agent.process.poll() is None
            assert agent.artifact.read_bytes() == builds["1.0.0"].path.read_bytes()
        finally:
            agent.stop()


# -- installed the README way ----------------------------------------------------------------
def release_build(version: str, output: Path) -> Artifact:
    """``remote-support release build``, as the README says to make the file to install."""
    run = subprocess.run([str(BIN / "remote-support"), "release", "build", "--version", version,
                          "--output", str(output)], capture_output=True, text=True,
                         timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    return Artifact(path=output, version=version, sha256=sha256_file(output))


def desktop_exec(entry: Path) -> list[str]:
    """The ``Exec=`` line of a desktop entry, read as the Desktop Entry Specification says.

    String escapes first (``\\\\`` is one backslash), then the quoting rules (double
    quotes; inside them a backslash escapes the next character), then ``%%`` is ``%``.
    """
    value = next(line.removeprefix("Exec=") for line in entry.read_text().splitlines()
                 if line.startswith("Exec="))
    escapes = {"\\": "\\", "s": " ", "n": "\n", "t": "\t", "r": "\r"}
    value = re.sub(r"\\(.)", lambda m: escapes.get(m[1], m[0]), value)
    argv: list[str] = []
    word: str | None = None
    quoted = False
    chars = iter(value)
    for char in chars:
        if quoted and char == "\\":
            word = (word or "") + next(chars)
        elif char == '"':
            quoted, word = not quoted, word or ""
        elif char == " " and not quoted:
            if word is not None:
                argv.append(word)
            word = None
        else:
            word = (word or "") + char
    if word is not None:
        argv.append(word)
    return [arg.replace("%%", "%") for arg in argv]


class StartedAgent:
    """An agent process started from a command line the test did not write."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path,
                 artifact: Path) -> None:
        self.artifact = artifact
        self.log = log
        with log.open("ab") as out:
            self.process = subprocess.Popen(argv, env=env, stdout=out, stderr=out)

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        stop_process(self.process)


def test_an_agent_installed_from_a_release_build_updates_itself(tmp_path, x_display, server,
                                                                 api, releases):
    """The README way: build, ``python remote-agent.pyz install``, start-up runs it, update.

    Start-up once ran ``python -m remote_agent``: the source package, version
    0.1.0, which reported every update as failed and never asked the release host.
    """
    home = tmp_path / "home of the user"  # empty, and a space the start-up line must quote
    home.mkdir()
    builds = {v: release_build(v, tmp_path / "dist" / f"remote-agent-{v}.pyz")
              for v in ("1.0.0", "1.0.1")}
    installed = tmp_path / "opt" / "remote agent" / "remote-agent.pyz"
    installed.parent.mkdir(parents=True)
    shutil.copy2(builds["1.0.0"].path, installed)
    env = {**os.environ, "HOME": str(home), "DISPLAY": x_display.display}
    for name in ("XDG_CONFIG_HOME", "REMOTE_SUPPORT_PORT"):
        env.pop(name, None)
    agent_id, key = api.machine_with_key()
    run = subprocess.run([sys.executable, str(installed), "install", "--server", server.url,
                          "--key", key], env=env, capture_output=True, text=True, timeout=60,
                         check=False)
    assert run.returncode == 0, run.stderr
    assert "will not apply updates" not in run.stderr
    config_path = home / ".config" / "remote-agent" / "agent.toml"
    config = AgentConfig.load(config_path)  # the operator trusts the release host's CA
    replace(config, ca_bundle=str(releases.ca_bundle)).save(config_path)

    argv = desktop_exec(home / ".config" / "autostart" / "remote-agent.desktop")
    agent = StartedAgent(argv, env, tmp_path / "agent.log", installed)
    try:
        wait_for("the installed agent online at 1.0.0",
                 lambda: online_at(api, agent_id, "1.0.0"), agent)
        pid = agent.process.pid
        url = releases.publish("remote-agent-1.0.1.pyz", Route(builds["1.0.1"].path.read_bytes()))
        release(api, "1.0.1", url, builds["1.0.1"].sha256)
        r = api.post(f"/api/machines/{agent_id}/update", json={"version": "1.0.1"})
        assert r.status_code == 202, r.text
        assert_updated(api, agent_id, agent, builds, pid)
        assert releases.hits["/remote-agent-1.0.1.pyz"] == 1
    finally:
        agent.stop()


# -- T45: the server SIGKILLed right after it pushed ADMIN_UPDATE ------------------------------
def process_argv(agent: ArtifactAgent) -> list[str]:
    return [a.decode() for a in
            Path(f"/proc/{agent.process.pid}/cmdline").read_bytes().split(b"\0") if a]


def running_version(agent: ArtifactAgent) -> str:
    """The build the agent process runs, read from the process rather than from the server.

    It started from the 1.0.0 file; restarting into an installed update is an
    ``execv`` that keeps the pid and adds ``--post-update`` to its command line.
    """
    return "1.0.1" if "--post-update" in process_argv(agent) else "1.0.0"


def file_runs_as(artifact: Path) -> str:
    """``python remote-agent.pyz --version``: the file on disk is whole and starts."""
    run = subprocess.run([sys.executable, str(artifact), "--version"], capture_output=True,
                         text=True, timeout=60, check=False, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def back_online(api: Api, agent_id: str, before: str) -> dict | None:
    """The machine row once the agent holds a session other than ``before``."""
    machine = api.machine(agent_id)
    if machine and machine["status"] == "online" and machine["session_id"] not in ("", before):
        return machine
    return None


@pytest.mark.parametrize("moment", ["pushed", "UPDATE_DOWNLOADING", "UPDATE_RESTARTING"])
def test_server_killed_after_admin_update_agent_comes_back_old_or_new(
        tmp_path, x_display, builds, server, api, releases, moment):
    """SIGKILL the server once it accepted the push (or while the agent downloads, or once
    the agent said it restarts into the update), then start it again on the same database.

    The agent must come back by itself (nobody restarts it), on a build that is
    whole and runs, with ``agent_version`` the build its process runs; it must not
    fetch the release again by itself; a second push must still work; and the
    cleanup of a second ``--post-update`` start must change nothing.
    """
    slow = moment == "UPDATE_DOWNLOADING"
    path = "/remote-agent-1.0.1.pyz"
    url = releases.publish(path, Route(builds["1.0.1"].path.read_bytes(),
                                       seconds_per_chunk=0.1 if slow else 0.0))
    release(api, "1.0.1", url, builds["1.0.1"].sha256)
    agent_id, agent = start_agent(tmp_path, x_display, builds, server, api, releases)
    try:
        pid = agent.process.pid
        first_session = api.machine(agent_id)["session_id"]
        r = api.post(f"/api/machines/{agent_id}/update", json={"version": "1.0.1"})
        assert r.status_code == 202, r.text
        if moment != "pushed":
            wait_for(moment, lambda: [e for e in reported(api, agent_id, moment)
                                      if not slow or e["progress"] > 0], agent)
        assert server.process is not None
        server.process.kill()  # no shutdown, no Disconnect: the socket simply dies
        server.process.wait(10)
        server.start()  # the same port and database
        with closing(Api(server)) as after:  # a fresh login on the new process
            machine = wait_for("the agent back by itself after the restart",
                               lambda: back_online(after, agent_id, first_session), agent,
                               within=120)
            assert agent.process.pid == pid and agent.process.poll() is None
            runs = running_version(agent)
            on_disk = built_version(agent.artifact, builds)
            assert on_disk in ("1.0.0", "1.0.1")  # whole, never neither
            assert file_runs_as(agent.artifact) == on_disk
            assert machine["agent_version"] == runs, (machine, runs)
            assert on_disk == runs, "an installed update the process never restarted into"
            if moment == "UPDATE_RESTARTING":
                assert runs == "1.0.1"
            if runs == "1.0.1":  # the outcome, reported once a server listened again
                wait_for("UPDATE_COMPLETE", lambda: reported(after, agent_id,
                                                             "UPDATE_COMPLETE"), agent)
            hits = releases.hits[path]
            assert hits <= 1
            time.sleep(5)  # nothing fetches the release again, nothing restarts
            assert releases.hits[path] == hits
            assert after.machine(agent_id)["session_id"] == machine["session_id"]
            assert agent.process.pid == pid and running_version(agent) == runs
            if runs == "1.0.0":  # the interrupted update wedged nothing: a new push works
                r = after.post(f"/api/machines/{agent_id}/update", json={"version": "1.0.1"})
                assert r.status_code == 202, r.text
                wait_for("agent_version 1.0.1", lambda: online_at(after, agent_id, "1.0.1"),
                         agent, within=120)
                wait_for("UPDATE_COMPLETE", lambda: reported(after, agent_id,
                                                             "UPDATE_COMPLETE"), agent)
                hits += 1
                assert releases.hits[path] == hits
                assert agent.process.pid == pid and running_version(agent) == "1.0.1"
            installed = sorted(p.name for p in agent.artifact.parent.iterdir())
            assert installed == ["remote-agent.pyz", "remote-agent.pyz.previous"]

            # Killed and started again with the command line it runs (``--post-update``
            # included): the cleanup runs a second time and changes nothing.
            agent.argv = process_argv(agent)
            assert agent.argv[-1] == "--post-update"
            session = after.machine(agent_id)["session_id"]
            agent.kill()
            agent.start()
            machine = wait_for("the agent back after a second --post-update start",
                               lambda: back_online(after, agent_id, session), agent)
            assert machine["agent_version"] == "1.0.1"
            assert agent.artifact.read_bytes() == builds["1.0.1"].path.read_bytes()
            previous = agent.artifact.with_name("remote-agent.pyz.previous")
            assert previous.read_bytes() == builds["1.0.0"].path.read_bytes()
            assert sorted(p.name for p in agent.artifact.parent.iterdir()) == installed
            assert releases.hits[path] == hits
    finally:
        agent.stop()

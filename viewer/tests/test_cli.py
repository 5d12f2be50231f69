"""``remote-viewer`` as a user runs it: every failure is one clear line and exit status 1.

A real server process; the agent is a scripted one speaking the wire over a
real socket, so the test decides exactly what the viewer is sent.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from remote_server.testing.processes import Api, ServerProcess, free_port

from remote_core.protocol import Connection, Inbound, Role, pb
from remote_core.wsclient import connect, ws_url

VIEWER = [sys.executable, "-m", "remote_viewer.cli"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path_factory.mktemp("server")).start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def api(server: ServerProcess) -> Iterator[Api]:
    client = Api(server)
    yield client
    client.close()


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The single line a failed run printed on stderr."""
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("remote-viewer: "), done.stderr
    return lines[0]


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*VIEWER, *args], capture_output=True, text=True, timeout=timeout,
                          check=False)


def test_an_unreachable_server_is_one_line(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    line = one_line(run("--server", url, "--token", "t", "screenshot", str(tmp_path / "out.png")))
    assert line.startswith(f"remote-viewer: cannot reach {url}: "), line


def test_a_codec_this_viewer_cannot_decode_is_one_line(tmp_path: Path) -> None:
    line = one_line(run("--server", "http://127.0.0.1:1", "--token", "t", "--codec", "nope",
                        "screenshot", str(tmp_path / "out.png")))
    assert "cannot decode codec 'nope'" in line and "raw" in line, line


def test_an_unusable_ca_bundle_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-ca.pem"
    line = one_line(run("--server", f"https://127.0.0.1:{free_port()}", "--token", "t",
                        "--ca-bundle", str(missing), "screenshot", str(tmp_path / "out.png")))
    assert line.startswith(f"remote-viewer: ca_bundle {missing} cannot be used: "), line


def test_the_ca_bundle_is_what_makes_a_private_certificate_trusted(tmp_path: Path) -> None:
    """Verification stays on: without the authority the server is refused; with
    ``--ca-bundle`` the viewer gets as far as the server judging its token."""
    from remote_server.testing.tls_terminator import TestCA, TlsServerProcess

    ca = TestCA(tmp_path / "ca")
    server = TlsServerProcess(tmp_path / "server", ca).start()
    out = str(tmp_path / "out.png")
    try:
        untrusted = one_line(run("--server", server.url, "--token", "t", "screenshot", out))
        trusted = one_line(run("--server", server.url, "--token", "t", "--ca-bundle",
                               str(ca.ca_pem), "screenshot", out))
    finally:
        server.stop()
    assert "certificate verify failed" in untrusted.lower(), untrusted
    assert "the server refused the viewer" in trusted, trusted


def test_a_refused_token_is_one_line(server: ServerProcess, tmp_path: Path) -> None:
    line = one_line(run("--server", server.url, "--token", "not-a-token", "screenshot",
                        str(tmp_path / "out.png")))
    assert "the server refused the viewer" in line, line


async def scripted_agent(server: ServerProcess, key: str, *, ready: anyio.Event,
                         frames: list[pb.VideoFrame]) -> None:
    """An agent that answers every StartStream with ``frames``, whatever the viewer lists."""
    ws = await connect(ws_url(server.url, "/ws/agent"))
    conn = Connection(Role.AGENT, Role.SERVER)
    try:
        await ws.send(conn.send("session_request", pb.SessionRequest(
            agent_id="scripted", session_token=key, client_version="1.0")))
        event = conn.receive_data(await ws.receive())
        assert isinstance(event, Inbound) and event.parse(pb.SessionResponse).success
        conn.authenticated()
        ready.set()
        while True:
            event = conn.receive_data(await ws.receive())
            if isinstance(event, Inbound) and event.kind == "start_stream":
                for frame in frames:
                    await ws.send(conn.send("video_frame", frame))
    finally:
        with anyio.CancelScope(shield=True):
            await ws.close()


@pytest.mark.anyio
async def test_no_picture_is_one_line_not_an_exception_group(server: ServerProcess, api: Api,
                                                             tmp_path: Path) -> None:
    """Only a codec this viewer does not list arrives: the relay passes nothing on, and
    the wait ends in one line (it was an ExceptionGroup traceback)."""
    agent_id, key = api.machine_with_key()
    png = pb.VideoFrame(sequence=1, display_id=1, plugin=pb.PluginFrame(
        codec="png", data=b"\x89PNG", keyframe=True, width=1, height=1))
    ready = anyio.Event()
    async with anyio.create_task_group() as group:
        group.start_soon(lambda: scripted_agent(server, key, ready=ready, frames=[png]))
        await ready.wait()
        token = api.viewer_token(api.live_session(agent_id)["id"])
        done = await anyio.to_thread.run_sync(lambda: run(
            "--server", server.url, "--token", token, "--timeout", "2", "screenshot",
            str(tmp_path / "out.png")))
        group.cancel_scope.cancel()
    assert one_line(done) == "remote-viewer: no picture within 2 s"
    assert not (tmp_path / "out.png").exists()

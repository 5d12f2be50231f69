"""A real server process, its REST API and real agent processes, for end-to-end tests."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

# re-exported: the server's test helpers and tests import it from here
from remote_core.testing.processes import stop_process as stop_process

from .deviations import check_deviations

BIN = Path(sys.executable).parent
ADMIN_PASSWORD = "e2e-admin-password-0123"  # noqa: S105 - throwaway test servers only


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


AGENT_TIMING = ("heartbeat_interval", "heartbeat_timeout")
"""Settings the agent has too (``REMOTE_AGENT_*``): a shortened server's agents keep pace."""


def settings_env(settings: Mapping[str, object]) -> dict[str, str]:
    """Test deviations (checked against the list) as ``REMOTE_SUPPORT_*`` variables.

    The heartbeat timing goes to the agent's ``REMOTE_AGENT_*`` variables as well, so a
    test hands an agent the server's shortened timeouts with the same call.
    """
    check_deviations(settings)
    env = {f"REMOTE_SUPPORT_{k.upper()}": str(v) for k, v in settings.items()}
    env |= {f"REMOTE_AGENT_{k.upper()}": str(v) for k, v in settings.items() if k in AGENT_TIMING}
    return env


class ServerProcess:
    """``remote-support serve`` on a fixed free port with a SQLite file; restartable.

    ``settings`` are deviations from the shipped defaults, each listed with its
    reason in :mod:`remote_server.testing.deviations`. :attr:`bin_dir` is the environment
    whose ``remote-support`` runs; set it before :meth:`start` to run another one than the
    suite's (an install from wheels).
    """

    def __init__(self, workdir: Path, **settings: object) -> None:
        self.listen = "127.0.0.1"
        """The address it listens on; set it before :meth:`start` to listen elsewhere too
        (``0.0.0.0``: a benchmark's agent reaches it across a link of its own, while
        :attr:`url` stays on loopback, where browsers give pages a secure context)."""
        deviations = settings_env(settings)
        self.port = free_port()
        self.bin_dir = BIN
        workdir.mkdir(parents=True, exist_ok=True)
        self.workdir = workdir
        self.env = {**os.environ, "REMOTE_SUPPORT_ADMIN_PASSWORD": ADMIN_PASSWORD,
                    "REMOTE_SUPPORT_DATABASE_URL": f"sqlite:///{workdir / 'server.db'}",
                    "REMOTE_SUPPORT_RECORDINGS_URL": f"file://{workdir / 'recordings'}",
                    "REMOTE_SUPPORT_PORT": str(self.port),
                    **deviations}
        self.process: subprocess.Popen[bytes] | None = None
        self.log = workdir / "server.log"
        self.verify: ssl.SSLContext | bool = True
        """What clients of :attr:`url` verify it with (a server serving TLS itself sets
        its test authority's context)."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def ws_url(self, path: str) -> str:
        """The WebSocket URL of ``path`` (``/ws/agent``, ``/ws/viewer``) on this server."""
        return self.url.replace("http", "ws", 1) + path  # https -> wss

    def start(self) -> ServerProcess:
        self.launch()
        return self.wait_ready()

    def launch(self) -> ServerProcess:
        """Start the process without waiting for it (see :func:`start_all`)."""
        self.env["REMOTE_SUPPORT_HOST"] = self.listen
        with self.log.open("ab") as log:
            self.process = subprocess.Popen([str(self.bin_dir / "remote-support"), "serve"],
                                            env=self.env, stdout=log, stderr=log)
        return self

    def wait_ready(self) -> ServerProcess:
        """Wait until the launched process answers ``/healthz``."""
        assert self.process is not None, "launch() first"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1,
                             verify=self.verify).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError("server did not become healthy")

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process)
        self.process = None

    def kill(self) -> None:
        """SIGKILL: the machine lost power; nothing is said or cleaned up."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
        self.process = None


def start_all(*processes: ServerProcess) -> None:
    """Start several servers at once, as a cluster's nodes come up: their start-ups
    overlap instead of queueing (a node's start is mostly its own imports)."""
    for process in processes:
        process.launch()
    for process in processes:
        process.wait_ready()


class Api(httpx.Client):
    """The REST API as the first admin."""

    def __init__(self, server: ServerProcess) -> None:
        super().__init__(base_url=server.url, timeout=15, verify=server.verify)
        r = self.post("/api/auth/login", json={"username": "admin", "password": ADMIN_PASSWORD})
        r.raise_for_status()
        self.headers["Authorization"] = f"Bearer {r.json()['access_token']}"

    def machine_with_key(self, **fields: Any) -> tuple[str, str]:
        r = self.post("/api/machines", json={"organization": "", "site": "", "tags": [],
                                             **fields})
        r.raise_for_status()
        agent_id = r.json()["agent_id"]
        r = self.post(f"/api/machines/{agent_id}/keys", json={})
        r.raise_for_status()
        return agent_id, r.json()["key"]

    def support_code(self) -> str:
        r = self.post("/api/codes", json={})
        r.raise_for_status()
        return str(r.json()["code"])

    def machine(self, agent_id: str) -> dict[str, Any] | None:
        r = self.get(f"/api/machines/{agent_id}")
        return r.json() if r.status_code == 200 else None

    def live_session(self, agent_id: str | None = None, within: float = 20.0,
                     consent: str | None = None) -> dict[str, Any]:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            r = self.get("/api/sessions", params={"live": "true", "limit": 1000})
            r.raise_for_status()
            for item in r.json():
                if item["live"] and (agent_id is None or item["agent_id"] == agent_id) and (
                        consent is None or item["consent_state"] == consent):
                    return dict(item)
            time.sleep(0.1)
        raise AssertionError(f"no live session for {agent_id} (consent {consent})")

    def viewer_token(self, session_id: str) -> str:
        r = self.post(f"/api/sessions/{session_id}/viewer-token")
        r.raise_for_status()
        return str(r.json()["token"])

    def events(self, session_id: str, kind: str | None = None) -> list[dict[str, Any]]:
        """The session's audit events, newest first (those of ``kind`` alone, if given)."""
        r = self.get("/api/events", params={"session_id": session_id, "limit": 500})
        r.raise_for_status()
        return [e for e in r.json() if kind is None or e["kind"] == kind]


class AgentProcess:
    """``remote-agent`` as a child process on a given X display, with its own config home
    (``bin_dir``: the environment it runs from)."""

    def __init__(self, home: Path, display: str, *args: str, bin_dir: Path = BIN,
                 prefix: Sequence[str] = (), **env: str) -> None:
        """``prefix`` runs it through another command (``ip netns exec NS``)."""
        home.mkdir(parents=True, exist_ok=True)
        self.home = home
        self.log = home / "agent.log"
        environ = {**os.environ, "DISPLAY": display, "XDG_CONFIG_HOME": str(home / "config"),
                   "HOME": str(home), **env}
        environ.pop("REMOTE_SUPPORT_PORT", None)
        with self.log.open("ab") as log:
            self.process = subprocess.Popen([*prefix, str(bin_dir / "remote-agent"), *args],
                                            env=environ,
                                            stdout=log, stderr=log)

    @property
    def config_path(self) -> Path:
        return self.home / "config" / "remote-agent" / "agent.toml"

    def wait(self, within: float = 20.0) -> int:
        try:
            return self.process.wait(within)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"agent still running; log:\n{self.output()}") from None

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        stop_process(self.process)


def next_message(ws: Any, kind: str, within: float = 10.0) -> Any:
    """The next ``Message`` of ``kind`` on a blocking WebSocket (``websockets.sync``);
    others (heartbeat acks, status) pass."""
    from remote_core.protocol import pb

    while True:
        message = pb.Message()
        message.ParseFromString(ws.recv(timeout=within))
        if message.WhichOneof("payload") == kind:
            return message

"""HAProxy in front of cluster nodes, run from the shipped ``deploy/haproxy`` configuration.

The test changes only what a deployment changes: the address it binds and the
nodes' addresses on the ``server`` lines. HAProxy is Debian's package
(installed by ``scripts/bootstrap``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

import httpx

from .processes import free_port, stop_process

__all__ = ["SHIPPED_CONFIG", "LoadBalancer"]

SHIPPED_CONFIG = Path(__file__).resolve().parents[3] / "deploy" / "haproxy" / "remote-support.cfg"


class LoadBalancer:
    """HAProxy on ``127.0.0.1:port`` spreading over ``nodes`` (name -> port)."""

    def __init__(self, directory: Path, nodes: Mapping[str, int]) -> None:
        self.directory = directory
        self.nodes = dict(nodes)
        self.port = free_port()
        self.log = directory / "haproxy.log"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self._process is not None, "start() first"
        return self._process.pid

    def config(self) -> str:
        """The shipped file with this test's bind address and nodes (a ``server`` line and a
        ``use-server`` line routing ``?node=NAME`` each)."""
        text = SHIPPED_CONFIG.read_text()
        text = re.sub(r"(?m)^(\s*)bind :8080$", rf"\g<1>bind 127.0.0.1:{self.port}", text)
        lines = [f"    use-server {name} if {{ urlp(node) -m str {name} }}"
                 for name in self.nodes]
        lines += [f"    server {name} 127.0.0.1:{port} check"
                  for name, port in self.nodes.items()]
        text = re.sub(r"(?m)^\s*(server \S+ \S+ check|use-server \S+ if .*)\n", "", text)
        return text.rstrip("\n") + "\n" + "\n".join(lines) + "\n"

    def start(self) -> LoadBalancer:
        """Start, and wait until the nodes have passed their first health checks."""
        haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
        self.directory.mkdir(parents=True, exist_ok=True)
        config = self.directory / "haproxy.cfg"
        config.write_text(self.config())
        with self.log.open("ab") as log:
            self._process = subprocess.Popen([haproxy, "-db", "-f", str(config)],
                                             stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"haproxy exited: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1).status_code == 200:
                    time.sleep(2.5)  # every node's first health checks (inter 1s, rise 2)
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError("haproxy did not come up")

    def stop(self) -> None:
        if self._process is not None:
            stop_process(self._process)
        self._process = None

"""A real Prometheus (Debian's ``prometheus``) scraping one server, for the metrics tests."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from remote_core.testing.services import unavailable

from .processes import free_port, stop_process

__all__ = ["Prometheus"]


class Prometheus:
    """``prometheus`` with a configuration scraping ``target``'s ``/metrics`` every second,
    with a bearer token when given; its query API at :attr:`url`."""

    def __init__(self, workdir: Path, target: str, token: str | None = None) -> None:
        binary = shutil.which("prometheus")
        if binary is None:
            unavailable("prometheus is not installed (Debian package prometheus; "
                        "scripts/bootstrap installs it)")
        workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.log = workdir / "prometheus.log"
        config = workdir / "prometheus.yml"
        auth = ""
        if token is not None:
            secret = workdir / "metrics-token"
            secret.write_text(token)
            secret.chmod(0o600)
            auth = f"    authorization:\n      credentials_file: {secret}\n"
        config.write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
            "scrape_configs:\n  - job_name: remote-support\n"
            f"{auth}    static_configs:\n      - targets: ['{target}']\n")
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [binary, f"--config.file={config}", f"--storage.tsdb.path={workdir / 'data'}",
                 f"--web.listen-address=127.0.0.1:{self.port}"],
                stdout=log, stderr=log, start_new_session=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def query(self, expression: str) -> list[dict[str, Any]]:
        """The instant vector ``expression`` selects now (empty before the first scrape)."""
        r = httpx.get(f"{self.url}/api/v1/query", params={"query": expression}, timeout=5)
        r.raise_for_status()
        body = r.json()
        assert body["status"] == "success", body
        return list(body["data"]["result"])

    def wait_for(self, expression: str, value: float, within: float = 60.0) -> None:
        """Wait until ``expression`` has one sample equal to ``value``."""
        deadline = time.monotonic() + within
        seen: Any = None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"prometheus exited: {self.log.read_text()[-2000:]}")
            try:
                seen = self.query(expression)
            except httpx.TransportError:
                seen = "not answering yet"
            except httpx.HTTPStatusError as exc:
                if exc.response.status_code != 503:  # 503: still starting (not ready)
                    raise
                seen = "not ready yet"
            else:
                if len(seen) == 1 and float(seen[0]["value"][1]) == value:
                    return
            time.sleep(0.5)
        raise AssertionError(f"{expression} never became {value}: last {seen}; "
                             f"log:\n{self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        stop_process(self.process)

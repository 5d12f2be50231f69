"""A real S3 endpoint for the tests: moto's standalone server on a free loopback port, one
per test module, with a bucket; and the AWS environment the stores under test read.

moto takes any key id and secret; the ones here are obviously tests' own. The machine's
own AWS settings (a profile, shared files, an instance role) never reach a test.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from remote_server.testing.processes import free_port, stop_process

KEY_ID = "test-key-id-for-moto"
SECRET = "test-secret-for-moto-never-shown"  # moto takes any
BUCKET = "recordings-test"


def without_aws(environ: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in environ.items() if not k.startswith("AWS_")}


class MotoServer:
    """``python -m moto.server`` on 127.0.0.1; :meth:`stalled` freezes it (SIGSTOP), as an
    endpoint that accepts connections and never answers."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.bucket = BUCKET
        self.log = workdir / "moto.log"
        self.workdir = workdir
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                stdout=log, stderr=log, env=without_aws(dict(os.environ)))
        deadline = time.monotonic() + 60  # its imports take seconds on a busy machine
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"moto exited: {self.log.read_text()[-2000:]}")
            try:
                httpx.get(f"{self.endpoint}/moto-api/", timeout=1)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise RuntimeError("moto did not start within 60 s") from None
                time.sleep(0.1)
        self.client().create_bucket(Bucket=BUCKET)

    def client(self) -> Any:
        """A boto3 client of this endpoint with the tests' credentials."""
        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id=KEY_ID, aws_secret_access_key=SECRET)

    def url(self, prefix: str, bucket: str = BUCKET) -> str:
        return f"s3://{bucket}/{prefix}?endpoint={self.endpoint}&region=us-east-1"

    @contextmanager
    def stalled(self) -> Iterator[None]:
        """Freeze the server (its socket still takes connections) for the block."""
        os.kill(self.process.pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(self.process.pid, signal.SIGCONT)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGCONT)  # a stopped process never hears TERM
            stop_process(self.process)


@pytest.fixture(scope="module")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    server = MotoServer(tmp_path_factory.mktemp("moto"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def aws_variables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The AWS variables of a process talking to moto (and no other AWS ones: no profile,
    no shared files, no instance role)."""
    nowhere = tmp_path_factory.mktemp("no-aws")
    return {"AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET,
            "AWS_CONFIG_FILE": str(nowhere / "config"),
            "AWS_SHARED_CREDENTIALS_FILE": str(nowhere / "credentials"),
            "AWS_EC2_METADATA_DISABLED": "true"}


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, aws_variables: dict[str, str]) -> dict[str, str]:
    """This process's AWS variables for one test: :func:`aws_variables` only."""
    for name in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(name)
    for name, value in aws_variables.items():
        monkeypatch.setenv(name, value)
    return aws_variables


@pytest.fixture
def s3_url(moto: MotoServer, aws_env: dict[str, str]) -> str:
    """An ``s3:`` URL of moto's bucket under a prefix of this test's own."""
    return moto.url(f"tests/{uuid.uuid4().hex[:12]}")


@pytest.fixture
def stall(moto: MotoServer) -> Callable[[], AbstractContextManager[None]]:
    return moto.stalled

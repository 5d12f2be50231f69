"""A PostgreSQL server of the test's own, which the test may stop and start at will.

The shared service on 5432 serves every suite at once and must never stop;
a fault test that takes the database away (T53) runs its own cluster instead:
Debian's ``initdb`` into a temporary directory, ``pg_ctl`` on a free port of
127.0.0.1, trust authentication for loopback only. PostgreSQL refuses to run
as root, so under root the cluster belongs to the ``postgres`` user.

Use :func:`private_postgres` as a context manager, or the ``private_postgres``
fixture (import :func:`private_postgres_fixture` into a ``conftest.py``).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from remote_core.testing.services import unavailable

from .processes import free_port

__all__ = ["PrivatePostgres", "find_pg_bin", "private_postgres", "private_postgres_fixture"]

OWNER = "postgres"
"""The account the cluster runs as when the tests run as root."""


def find_pg_bin() -> Path | None:
    """The newest installed ``/usr/lib/postgresql/<version>/bin`` with initdb and pg_ctl."""
    found = [Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/initdb")
             if (Path(p).parent / "pg_ctl").exists()]
    return max(found, key=lambda p: int(p.parent.name)) if found else None


class PrivatePostgres:
    """One cluster: ``url`` for the store (database ``test``), :meth:`stop` and :meth:`start`."""

    def __init__(self, bin_dir: Path, root: Path) -> None:
        self.bin = bin_dir
        self.root = root
        self.data = root / "data"
        self.log = root / "postgres.log"
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/test"
        self._as_owner = os.geteuid() == 0

    def _run(self, *args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [str(a) for a in args]
        if self._as_owner:
            owner = pwd.getpwnam(OWNER)

            def drop() -> None:
                os.setgid(owner.pw_gid)
                os.setuid(owner.pw_uid)

            return subprocess.run(command, check=check, capture_output=True, text=True,
                                  preexec_fn=drop, cwd=self.root,
                                  env={**os.environ, "HOME": str(self.root)})
        return subprocess.run(command, check=check, capture_output=True, text=True, cwd=self.root)

    def init(self) -> None:
        if self._as_owner:
            owner = pwd.getpwnam(OWNER)
            os.chown(self.root, owner.pw_uid, owner.pw_gid)
        self._run(self.bin / "initdb", "-D", self.data, "-U", "postgres", "--auth=trust",
                  "--encoding=UTF8", "--no-sync")
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(f"\nlisten_addresses = '127.0.0.1'\nport = {self.port}\n"
                       f"unix_socket_directories = '{self.root}'\nfsync = off\n"
                       "max_connections = 200\n")

    def start(self) -> None:
        """Start the server and wait until it takes connections."""
        self._run(self.bin / "pg_ctl", "-D", self.data, "-l", self.log, "-w", "-t", "60",
                  "start")

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: open connections are cut, as in an outage)."""
        self._run(self.bin / "pg_ctl", "-D", self.data, "-m", mode, "-w", "-t", "60", "stop")

    def running(self) -> bool:
        status = self._run(self.bin / "pg_ctl", "-D", self.data, "status", check=False)
        return status.returncode == 0

    def create_database(self, name: str) -> None:
        self._run(self.bin / "psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                  "-d", "postgres", "-c", f'CREATE DATABASE "{name}"')


@contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    """A running private cluster with an empty database ``test``; removed on exit."""
    bin_dir = find_pg_bin()
    if bin_dir is None or (os.geteuid() == 0 and not _has_owner()):
        unavailable("no PostgreSQL server binaries (/usr/lib/postgresql/*/bin) to run a "
                     "private cluster with")
    root = Path(tempfile.mkdtemp(prefix="private-pg-"))
    cluster = PrivatePostgres(bin_dir, root)
    try:
        cluster.init()
        cluster.start()
        cluster.create_database("test")
        yield cluster
    finally:
        if cluster.data.exists() and cluster.running():
            cluster.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)


def _has_owner() -> bool:
    try:
        pwd.getpwnam(OWNER)
    except KeyError:
        return False
    return True


@pytest.fixture(name="private_postgres")
def private_postgres_fixture() -> Iterator[PrivatePostgres]:
    """The context manager as the fixture ``private_postgres``: import
    ``private_postgres_fixture`` into a ``conftest.py`` to use it."""
    with private_postgres() as cluster:
        yield cluster

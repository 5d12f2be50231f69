"""T55: ``remote-support migrate`` killed in the middle of its upgrade, then run again.

Re-running an applied migration and refusing a schema from a newer release
are in plugins/store_sql/tests/test_migrations.py. Here the process is
SIGKILLed as soon as it says it is running the first revision: the upgrade is
one transaction, so the next run finds either nothing or everything, and
completes (alembic #201; mx-puppet-bridge #96 is what a partial one costs).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from remote_server.testing.processes import BIN
from remote_store_sql.testing import Database, postgres_database, sqlite_database

pytestmark = pytest.mark.slow


@contextmanager
def empty(kind: str, path: Path) -> Iterator[Database]:
    if kind == "sqlite":
        yield sqlite_database(path)
    else:
        with postgres_database("security_migrate") as database:
            yield database


def migrate(url: str) -> subprocess.Popen[str]:
    env = {**os.environ, "REMOTE_SUPPORT_DATABASE_URL": url}
    return subprocess.Popen([str(BIN / "remote-support"), "migrate"], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgresql",
                                                         marks=pytest.mark.postgres)])
def test_t55_a_migration_killed_midway_completes_on_the_next_run(tmp_path: Path,
                                                                  kind: str) -> None:
    with empty(kind, tmp_path) as database:
        run = migrate(database.url)
        assert run.stdout is not None
        seen = []
        for line in run.stdout:
            seen.append(line)
            if "Running upgrade" in line:
                run.kill()
                break
        run.wait(30)
        assert run.returncode == -9, "".join(seen)  # killed, not finished
        again = migrate(database.url)
        output = again.communicate(timeout=60)[0]
        assert again.returncode == 0, output
        assert "is at the newest schema" in output and "Traceback" not in output
        # It ran the upgrade again from the start: the killed one left nothing behind.
        assert "Running upgrade  -> 0001" in output, output
        assert len(database.execute("SELECT id FROM tenants")) == 1, "seeded once"
        assert len(database.execute("SELECT version_num FROM alembic_version")) == 1

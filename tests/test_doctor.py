"""``remote-support doctor`` against real databases, a real NATS and real certificates."""

from __future__ import annotations

import os
import shutil
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
import trustme
from remote_server.doctor import check_certificate, check_clock
from remote_server.testing.processes import free_port
from remote_store_sql import _migrate
from remote_store_sql.testing import postgres_database

from remote_core.testing.services import require_service


def doctor(**settings: str) -> tuple[int, list[str]]:
    """Run the installed command with these ``REMOTE_SUPPORT_*`` settings only."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMOTE_SUPPORT_")}
    env |= {f"REMOTE_SUPPORT_{k.upper()}": v for k, v in settings.items()}
    exe = shutil.which("remote-support")
    assert exe
    done = subprocess.run([exe, "doctor"], env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout.splitlines()


def verdicts(lines: list[str]) -> dict[str, str]:
    """Each check's name and level, from ``LEVEL NAME: message`` lines."""
    found = {}
    for line in lines:
        level, _, rest = line.partition(" ")
        if level in ("ok", "warning", "error"):
            found[rest.strip().split(":")[0]] = level
    return found


def migrated_sqlite(path: Path, revision: str = "head") -> str:
    url = f"sqlite:///{path}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        _migrate.upgrade(conn, revision)
    engine.dispose()
    return url


def test_a_healthy_sqlite_deployment_passes(tmp_path: Path) -> None:
    status, lines = doctor(database_url=migrated_sqlite(tmp_path / "db"))
    assert status == 0, lines
    assert verdicts(lines) == {"settings": "ok", "plugins": "ok", "database": "ok",
                               "clock": "ok"}
    assert lines[-1] == "all checks passed"


@pytest.mark.postgres
def test_a_healthy_postgresql_cluster_node_passes_with_its_clock_and_bus() -> None:
    require_service("NATS", "127.0.0.1", 4222)
    with postgres_database("doctor") as database:
        engine = sa.create_engine(database.url.replace("postgresql://", "postgresql+psycopg://"))
        with engine.begin() as conn:
            _migrate.upgrade(conn)
        engine.dispose()
        status, lines = doctor(database_url=database.url, bus_url="nats://127.0.0.1:4222",
                               limits_url="redis://127.0.0.1:6379")
    assert status == 0, lines
    assert verdicts(lines) == {"settings": "ok", "plugins": "ok", "database": "ok",
                               "clock": "ok", "bus": "ok"}
    assert any("behind the database server" in line or "ahead of" in line for line in lines)


def test_an_unreachable_database_is_an_error_with_its_fix() -> None:
    status, lines = doctor(database_url=f"postgresql://postgres:hunter2@127.0.0.1:"
                                        f"{free_port()}/absent")
    assert status == 1
    database = next(line for line in lines if "database:" in line)
    assert database.startswith("error") and "cannot reach" in database
    assert "fix:" in database
    assert "hunter2" not in "\n".join(lines)


def test_a_sqlite_file_in_a_missing_directory_is_an_error(tmp_path: Path) -> None:
    status, lines = doctor(database_url=f"sqlite:///{tmp_path}/absent/remote.db")
    assert status == 1
    assert "does not exist" in next(line for line in lines if "database:" in line)


def test_migrations_behind_are_an_error(tmp_path: Path) -> None:
    old = _migrate.revisions()[0]
    status, lines = doctor(database_url=migrated_sqlite(tmp_path / "db", old))
    assert status == 1
    database = next(line for line in lines if "database:" in line)
    assert database.startswith("error") and old in database
    assert "remote-support migrate" in database


def test_an_unreachable_bus_is_an_error(tmp_path: Path) -> None:
    status, lines = doctor(database_url=migrated_sqlite(tmp_path / "db"),
                           bus_url=f"nats://user:hunter2@127.0.0.1:{free_port()}",
                           limits_url="redis://127.0.0.1:6379")
    assert status == 1
    assert verdicts(lines)["bus"] == "error"
    assert verdicts(lines)["database"] == "ok", "one outage does not hide the other checks"
    assert "hunter2" not in "\n".join(lines)


def test_settings_that_do_not_load_are_an_error() -> None:
    status, lines = doctor(port="eighty")
    assert status == 1
    assert verdicts(lines) == {"settings": "error"}


def test_certificates_readable_matching_and_not_expiring(tmp_path: Path) -> None:
    ca = trustme.CA()
    issued = ca.issue_cert("remote.example")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    issued.cert_chain_pems[0].write_to_path(str(cert))
    issued.private_key_pem.write_to_path(str(key))
    assert [c.level for c in check_certificate(cert, key)] == ["ok", "ok"]

    other = tmp_path / "other.pem"
    ca.issue_cert("other.example").private_key_pem.write_to_path(str(other))
    assert [c.level for c in check_certificate(cert, other)] == ["ok", "error"]

    from cryptography import x509

    expires = x509.load_pem_x509_certificate(cert.read_bytes()).not_valid_after_utc
    soon = list(check_certificate(cert, None, now=expires - timedelta(days=3)))
    assert [c.level for c in soon] == ["warning"] and "renew" in soon[0].fix
    late = list(check_certificate(cert, None, now=expires + timedelta(days=1)))
    assert [c.level for c in late] == ["error"] and "expired" in late[0].message
    missing = list(check_certificate(tmp_path / "absent.pem", None))
    assert [c.level for c in missing] == ["error"]


def test_clock_skew_levels() -> None:
    assert check_clock(0.3).level == "ok"
    assert check_clock(-5).level == "warning"
    assert check_clock(120).level == "error"

"""Readiness follows the database: a server whose database is gone answers 503."""

from __future__ import annotations

from remote_server.testing.deviations import test_settings
from remote_server.testing.liveserver import ApiClient, assert_problem, live_server

from remote_core.testing.services import POSTGRES_ADMIN_URL, require_service, unique_name


def test_readyz_is_503_when_the_database_is_gone() -> None:
    require_service("PostgreSQL", "127.0.0.1", 5432)
    import psycopg

    name = unique_name("ready")
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    try:
        settings = test_settings(database_url=url, admin_password="ready-admin-password")
        with live_server(settings) as server:
            client = ApiClient(server)
            assert client.get("/readyz").json()["status"] == "ready"
            with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            assert_problem(client.get("/readyz"), 503, "database")
            assert client.get("/healthz").status_code == 200, "the process itself is alive"
    finally:
        with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_readyz_is_503_once_the_server_is_shutting_down(tmp_path) -> None:
    """A draining node leaves the load balancer's rotation before its sockets close."""
    settings = test_settings(database_url=f"sqlite:///{tmp_path / 'ready.db'}",
                             admin_password="ready-admin-password")
    with live_server(settings) as server:
        client = ApiClient(server)
        assert client.get("/readyz").status_code == 200
        server.app.state.ctx.registry.index.closing = True  # what SIGTERM's shutdown sets
        assert_problem(client.get("/readyz"), 503, "shutting down")

"""Readiness follows the database: a server whose database is gone answers 503."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import psycopg
from remote_server.testing.deviations import test_settings
from remote_server.testing.liveserver import ApiClient, assert_problem, live_server
from remote_store_sql.testing import postgres_database
from sqlalchemy.engine import make_url

from remote_core.testing.services import POSTGRES_ADMIN_URL

POOLED = 30
"""The store's pool on PostgreSQL: 10 connections and 20 more on demand."""


def test_readyz_is_503_when_the_database_is_gone() -> None:
    with postgres_database("ready") as database:
        settings = test_settings(database_url=database.url,
                                 admin_password="ready-admin-password")
        with live_server(settings) as server:
            client = ApiClient(server)
            assert client.get("/readyz").json()["status"] == "ready"
            name = make_url(database.url).database
            with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            assert_problem(client.get("/readyz"), 503, "database")
            assert client.get("/healthz").status_code == 200, "the process itself is alive"


def test_readyz_answers_while_every_pooled_connection_is_busy() -> None:
    """A storm of admissions keeps the pool's connections busy and its queue long; the
    readiness check asks on a connection of its own, so a load balancer does not take a
    working node out of rotation (and cut its agents off)."""
    with postgres_database("busy") as database:
        settings = test_settings(database_url=database.url,
                                 admin_password="busy-admin-password")
        with live_server(settings) as server, ThreadPoolExecutor(POOLED + 10) as pool:
            admin = ApiClient(server).login("admin", "busy-admin-password")
            with psycopg.connect(database.url) as locker:  # machine reads wait on its lock
                locker.execute("LOCK TABLE machines IN ACCESS EXCLUSIVE MODE")
                waiting = [pool.submit(admin.get, "/api/machines")
                           for _ in range(POOLED + 10)]
                time.sleep(1.0)  # all pooled connections taken, the rest queued
                assert not any(f.done() for f in waiting)
                r = ApiClient(server).get("/readyz", timeout=3)
                assert r.status_code == 200 and r.json()["status"] == "ready"
                locker.rollback()
            assert all(f.result(timeout=60).status_code == 200 for f in waiting)


def test_readyz_is_503_once_the_server_is_shutting_down(tmp_path) -> None:
    """A draining node leaves the load balancer's rotation before its sockets close."""
    settings = test_settings(database_url=f"sqlite:///{tmp_path / 'ready.db'}",
                             admin_password="ready-admin-password")
    with live_server(settings) as server:
        client = ApiClient(server)
        assert client.get("/readyz").status_code == 200
        server.app.state.ctx.registry.index.closing = True  # what SIGTERM's shutdown sets
        assert_problem(client.get("/readyz"), 503, "shutting down")

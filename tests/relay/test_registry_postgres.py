"""Two server processes on one PostgreSQL database: a support code still binds once (SPEC 3.2).

Each registry is what one server process holds; they share nothing but the
database, whose conditional update must pick exactly one presenter.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import anyio
import pytest
from remote_server.relay import Registry
from remote_server.relay.audit import Audit
from remote_server.testing.deviations import test_settings
from remote_server.web.context import open_store
from remote_store_sql.testing import postgres_database

from remote_core.errors import SessionRefused
from remote_core.plugins import get_plugin_manager
from remote_core.protocol import pb
from remote_core.records import SupportCode, User, utcnow
from remote_core.supportcode import generate_support_code

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


async def test_racing_registries_bind_a_code_exactly_once() -> None:
    with postgres_database("relay") as database:
        settings = test_settings(database_url=database.url)
        plugins = get_plugin_manager(settings)
        stores = [open_store(settings, plugins) for _ in range(2)]
        for store in stores:
            await store.open()
        try:
            registries = [Registry(settings=settings, store=s, plugins=plugins,
                                   audit=Audit(s, plugins)) for s in stores]
            for registry in registries:
                await registry.restore()
            user = await stores[0].create_user(User(id=str(uuid.uuid4()), username="tech",
                                                    password_hash="x"))
            code = generate_support_code()
            await stores[0].create_support_code(SupportCode(
                code=code, created_by=user.id, technician_name="tech",
                expires_at=utcnow() + timedelta(hours=1)))
            outcomes: list[str] = []

            async def present(registry: Registry, n: int) -> None:
                request = pb.SessionRequest(session_token=code, agent_id=f"agent-{n}")
                try:
                    session = await registry.open_agent(request, client_ip="10.0.0.1")
                    outcomes.append(session.consent_state)
                except SessionRefused as exc:
                    outcomes.append(str(exc))

            async with anyio.create_task_group() as tg:
                for n in range(6):
                    tg.start_soon(present, registries[n % 2], n)
            assert sorted(outcomes) == ["pending"] + ["support code already used"] * 5
            row = await stores[1].get_support_code(code)
            assert row is not None and row.consumed_at is not None
            for registry in registries:
                await registry.shutdown("test over")
        finally:
            for store in stores:
                await store.close()

"""A client generated from the served document (openapi-python-client) runs an operator's
day, so a change of the API or its document that breaks generated clients fails here.

The generator must report nothing; every call goes through the generated functions and
models alone; every error arrives as a typed ``ProblemOut`` whose ``type`` is a member of
the generated ``ProblemType`` enum.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx
import pytest
from remote_server.testing.liveserver import LiveServer, fresh_ip, live_server
from remote_store_sql.store import SqlStore

from remote_core.testing.store_contract import make_session

from .conftest import ADMIN_PASSWORD, TECH_PASSWORD, server_settings

pytestmark = pytest.mark.slow

PACKAGE = "remote_support_api_client"
SUM = "cd" * 32


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(server_settings(tmp_path_factory.mktemp("generated"))) as live:
        yield live


@pytest.fixture(scope="module")
def generated(server: LiveServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The generated package, imported; the generator's output must be silent."""
    where = tmp_path_factory.mktemp("client")
    document = where / "openapi.json"
    document.write_bytes(httpx.get(f"{server.base_url}/api/openapi.json").content)
    tools = Path(sys.executable).parent  # the generator and the ruff it runs
    env = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ.get('PATH', '')}"}
    run = subprocess.run([str(tools / "openapi-python-client"), "generate", "--path",
                          str(document), "--output-path", str(where / PACKAGE), "--meta",
                          "none"], capture_output=True, text=True, env=env, timeout=300)
    output = (run.stdout + run.stderr).strip()
    assert run.returncode == 0, output
    assert output == f"Generating {where / PACKAGE}", f"the generator reported:\n{output}"
    sys.path.insert(0, str(where))
    try:
        yield Generated(importlib.import_module(PACKAGE))
    finally:
        sys.path.remove(str(where))
        for name in [n for n in sys.modules if n.split(".")[0] == PACKAGE]:
            del sys.modules[name]


class Generated:
    """The generated package: ``g.models.X``, ``g.call("users.create_user", ...)``."""

    def __init__(self, package: ModuleType) -> None:
        self.package = package
        self.models = importlib.import_module(f"{PACKAGE}.models")
        self.client_module = importlib.import_module(f"{PACKAGE}.client")

    def operation(self, operation_id: str) -> Callable[..., Any]:
        """The ``sync_detailed`` of an operation (its module is named after its id)."""
        module_name = operation_id.replace(".", "_")
        for tag in ("auth", "users", "machines", "keys", "sessions", "codes", "releases",
                    "audit", "health", "meta", "console"):
            try:
                module = importlib.import_module(f"{PACKAGE}.api.{tag}.{module_name}")
            except ModuleNotFoundError:
                continue
            return module.sync_detailed  # type: ignore[no-any-return]
        raise AssertionError(f"no generated operation {operation_id}")


class Operator:
    """Calls through the generated client, checking each answer's status and type."""

    def __init__(self, g: Generated, client: Any) -> None:
        self.g = g
        self.client = client

    def ok(self, operation_id: str, status: int = 200, **kwargs: Any) -> Any:
        r = self.g.operation(operation_id)(client=self.client, **kwargs)
        assert r.status_code == status, (operation_id, r.status_code, r.content[:500])
        return r.parsed

    def problem(self, operation_id: str, status: int, kind: str, **kwargs: Any) -> Any:
        r = self.g.operation(operation_id)(client=self.client, **kwargs)
        assert r.status_code == status, (operation_id, r.status_code, r.content[:500])
        problem = r.parsed
        assert isinstance(problem, self.g.models.ProblemOut), (operation_id, problem)
        assert problem.type_ is getattr(self.g.models.ProblemType, kind), problem.type_
        assert problem.status == status and problem.title and problem.detail
        return problem

    def every(self, operation_id: str, **kwargs: Any) -> list[Any]:
        """A whole list, page by page: the Link header names the next cursor."""
        items: list[Any] = []
        cursor: str | None = None
        while True:
            extra = {"cursor": cursor} if cursor else {}
            r = self.g.operation(operation_id)(client=self.client, limit=2, **kwargs, **extra)
            assert r.status_code == 200, r.content
            items += r.parsed
            link = r.headers.get("link")
            if link is None:
                return items
            url = link.split(";")[0].strip("<> ")
            cursor = parse_qs(urlsplit(url).query)["cursor"][0]


def test_an_operators_day_through_the_generated_client(generated: Generated,
                                                        server: LiveServer) -> None:
    g = generated
    m = g.models
    base = server.base_url
    anon = Operator(g, g.client_module.Client(base_url=base,
                                              headers={"X-Forwarded-For": fresh_ip()}))
    token = anon.ok("auth.login", body=m.LoginIn(username="admin", password=ADMIN_PASSWORD))
    assert token.token_type == "bearer" and token.expires_in > 0

    def logged_in(access_token: str) -> Any:
        return g.client_module.AuthenticatedClient(
            base_url=base, token=access_token, headers={"X-Forwarded-For": fresh_ip()})

    admin = Operator(g, logged_in(token.access_token))
    me = admin.ok("auth.me")
    assert me.role is m.Role.ADMIN and set(me.permissions) == set(m.Permission)

    # Users, permissions and client access.
    tess = admin.ok("users.create_user", 201, body=m.UserCreateIn(
        username="tess", password=TECH_PASSWORD, role=m.Role.TECHNICIAN,
        permissions=[m.Permission.VIEW]))
    assert tess.role is m.Role.TECHNICIAN and tess.created_at is not None
    admin.problem("users.create_user", 409, "USERNAME_TAKEN", body=m.UserCreateIn(
        username="tess", password=TECH_PASSWORD))
    tess = admin.ok("users.put_permissions", user_id=tess.id, body=m.PermissionsIn(
        permissions=[m.Permission.VIEW, m.Permission.SUPPORT_CODES]))
    assert set(tess.permissions) == {m.Permission.VIEW, m.Permission.SUPPORT_CODES}
    tess = admin.ok("users.put_client_access", user_id=tess.id,
                    body=m.ClientAccessIn(organizations=["acme"]))
    assert tess.client_access == ["acme"]
    for n in range(3):
        admin.ok("users.create_user", 201, body=m.UserCreateIn(
            username=f"extra{n}", password=TECH_PASSWORD))
    users = admin.every("users.list_users")
    assert [u.username for u in users] == ["admin", "tess", "extra0", "extra1", "extra2"]
    assert admin.ok("users.get_user", user_id=tess.id).username == "tess"
    admin.problem("users.delete_user", 409, "SELF_LOCKOUT", user_id=me.id)
    admin.ok("users.patch_user", user_id=users[-1].id, body=m.UserPatchIn(disabled=True))
    admin.ok("users.delete_user", 204, user_id=users[-1].id)
    admin.problem("users.get_user", 404, "NOT_FOUND", user_id=users[-1].id)

    tech_token = anon.ok("auth.login", body=m.LoginIn(username="tess", password=TECH_PASSWORD))
    tech = Operator(g, logged_in(tech_token.access_token))
    tech.problem("users.list_users", 403, "FORBIDDEN")
    tech.problem("auth.change_password", 403, "WRONG_PASSWORD", body=m.ChangePasswordIn(
        current_password="not-my-password", new_password="another-password"))
    Operator(g, logged_in("not-a-token")).problem("machines.list_machines", 401,
                                                  "UNAUTHORIZED")
    anon.problem("auth.login", 401, "BAD_CREDENTIALS",
                 body=m.LoginIn(username="tess", password="wrong-password"))

    # Machines, their keys, updates and history.
    made = [admin.ok("machines.create_machine", 201, body=m.MachineCreateIn(
        organization="acme" if n < 3 else "globex", site="hq", tags=["lab"]))
        for n in range(5)]
    assert all(x.status is m.MachineStatus.OFFLINE for x in made)
    acme = admin.every("machines.list_machines", organization="acme")
    assert [x.agent_id for x in acme] == [x.agent_id for x in made[:3]]
    offline = admin.every("machines.list_machines", status=m.MachineStatus.OFFLINE)
    assert len(offline) == 5
    assert {x.agent_id for x in tech.every("machines.list_machines")} == {
        x.agent_id for x in made[:3]}
    first = made[0].agent_id
    patched = admin.ok("machines.patch_machine", agent_id=first,
                       body=m.MachinePatchIn(site="branch", tags=["lab", "linux"]))
    assert (patched.site, patched.tags) == ("branch", ["lab", "linux"])
    issued = admin.ok("keys.issue_key", 201, agent_id=first, body=m.KeyCreateIn(label="one"))
    assert issued.key.startswith("cak_")
    admin.ok("keys.issue_key", 201, agent_id=first, body=m.KeyCreateIn(label="two"))
    admin.ok("keys.issue_key", 201, agent_id=first, body=m.KeyCreateIn(label="three"))
    keys = admin.every("keys.list_keys", agent_id=first)
    assert [k.label for k in keys] == ["one", "two", "three"]
    admin.ok("keys.revoke_key", 204, agent_id=first, key_id=issued.id)
    assert admin.every("keys.list_keys", agent_id=first)[0].revoked_at is not None
    admin.problem("keys.revoke_key", 404, "NOT_FOUND", agent_id=first, key_id="nope")

    admin.ok("releases.create_release", 201, body=m.ReleaseIn(
        version="2.0.0", download_url="https://dl.example.com/2.0.0", checksum_sha256=SUM))
    admin.problem("releases.create_release", 409, "RELEASE_EXISTS", body=m.ReleaseIn(
        version="2.0.0", download_url="https://dl.example.com/2.0.0", checksum_sha256=SUM))
    admin.problem("releases.create_release", 422, "VALIDATION_FAILED", body=m.ReleaseIn(
        version="2.0.1", download_url="http://dl.example.com/2.0.1", checksum_sha256=SUM))
    admin.ok("releases.create_release", 201, body=m.ReleaseIn(
        version="2.1.0", download_url="https://dl.example.com/2.1.0", checksum_sha256=SUM,
        mandatory=True, notes="fixes"))
    assert [r.version for r in tech.every("releases.list_releases")] == ["2.1.0", "2.0.0"]
    assert anon.ok("releases.version").version == "2.1.0"
    admin.ok("releases.patch_release", version="2.1.0", body=m.ReleasePatchIn(notes="more"))
    assert tech.ok("releases.get_release", version="2.1.0").notes == "more"
    admin.problem("releases.push_update", 409, "MACHINE_OFFLINE", agent_id=first,
                  body=m.UpdatePushIn(version="2.1.0"))
    admin.ok("releases.delete_release", 204, version="2.0.0")

    # Sessions: the relay writes their rows; operators list, read and remove them.
    sessions = _sessions(server, first, 3)
    listed = admin.every("sessions.list_sessions")
    assert [x.id for x in listed] == sessions[::-1]
    one = tech.ok("sessions.get_session", session_id=sessions[0])
    assert one.session_type is m.SessionType.SCREEN_CONTROL
    assert one.consent_state is m.ConsentState.NOT_REQUIRED
    assert one.source is m.SessionSource.AGENTKEY and one.live is False
    tech.problem("sessions.viewer_token", 409, "SESSION_NOT_LIVE", session_id=sessions[0])
    removed = admin.ok("sessions.delete_session", session_id=sessions[0], purge=True)
    assert removed.action is m.SessionRemovalAction.PURGED
    history = admin.every("machines.history", agent_id=first)
    kinds = [type(entry).__name__ for entry in history]
    assert kinds.count("SessionEntryOut") == 2 and "EventEntryOut" in kinds
    assert any(e.event.kind is m.EventKind.AGENT_KEY_ISSUED for e in history
               if type(e).__name__ == "EventEntryOut")

    # Support codes.
    code = tech.ok("codes.create_code", 201, body=m.CodeCreateIn(expires_in=600))
    assert code.status is m.CodeStatus.PENDING
    valid = anon.ok("codes.validate_code", body=m.CodeValidateIn(code=code.code))
    assert valid.valid is True and valid.technician == "tess"
    tech.ok("codes.create_code", 201, body=m.CodeCreateIn(expires_in=600))
    tech.ok("codes.create_code", 201, body=m.CodeCreateIn(expires_in=600))
    assert len(tech.every("codes.list_codes")) == 3
    tech.ok("codes.cancel_code", 204, code=code.code)
    tech.problem("codes.cancel_code", 409, "CODE_NOT_PENDING", code=code.code)
    anon.problem("codes.validate_code", 404, "NOT_FOUND", body=m.CodeValidateIn(
        code=code.code))

    # Bulk removal and removal with an export of the history.
    bulk = admin.ok("machines.bulk_remove", body=m.BulkRemoveIn(
        agent_ids=[made[3].agent_id, made[4].agent_id, "never-was"], purge=True))
    assert sorted(bulk.removed) == sorted([made[3].agent_id, made[4].agent_id])
    assert bulk.not_found == ["never-was"]
    removal = admin.ok("machines.delete_machine", agent_id=first, export=True)
    assert removal.action is m.RemovalAction.DELETED and removal.history_truncated is False
    assert len(removal.history) == len(history)
    admin.problem("machines.get_machine", 404, "NOT_FOUND", agent_id=first)

    # The audit log saw it all.
    events = admin.every("events.list_events")
    seen = {e.kind for e in events}
    assert {m.EventKind.USER_CREATED, m.EventKind.MACHINE_PREREGISTERED,
            m.EventKind.RELEASE_CREATED, m.EventKind.SUPPORT_CODE_CANCELLED,
            m.EventKind.MACHINE_PURGED, m.EventKind.MACHINE_DELETED} <= seen
    tech.problem("events.list_events", 403, "FORBIDDEN")

    # The login limit, as a typed problem with its wait.
    crowd = Operator(g, g.client_module.Client(base_url=base,
                                               headers={"X-Forwarded-For": fresh_ip()}))
    for _ in range(8):
        crowd.problem("auth.login", 401, "BAD_CREDENTIALS",
                      body=m.LoginIn(username="nobody", password="wrong-password"))
    limited = crowd.problem("auth.login", 429, "RATE_LIMITED",
                            body=m.LoginIn(username="nobody", password="wrong-password"))
    assert limited.retry_after >= 1


def _sessions(server: LiveServer, agent_id: str, count: int) -> list[str]:
    """Session rows, as the relay writes them, through a store of the test's own."""
    async def write() -> list[str]:
        store = SqlStore(server.ctx.settings.database_url)
        await store.open()
        try:
            return [(await store.create_session(make_session(agent_id))).id
                    for _ in range(count)]
        finally:
            await store.close()
    return anyio.run(write)

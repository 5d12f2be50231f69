"""The reconnect loop: managed agents outlive failures; attended ones end with their session,
a refusal, or a first connection that never got through, and try a lost one again."""

from __future__ import annotations

import asyncio
import sys
import time

import anyio
import pytest
from remote_agent.backoff import Backoff
from remote_agent.cli import event_loop_options
from remote_agent.runner import run_agent
from remote_agent.session import Ending

from remote_core.errors import SessionRefused
from remote_core.wsclient import ConnectionClosed


class _Session:
    """Stands in for a connection whose outcome is scripted."""

    def __init__(self, outcome, connects=False):
        self.outcome = outcome
        self.connects = connects
        self.connected_at = None

    async def run(self):
        if self.connects:
            self.connected_at = time.monotonic()
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome


def _script(*outcomes):
    pending = [o if isinstance(o, _Session) else _Session(o) for o in outcomes]
    return lambda: pending.pop(0)


@pytest.mark.anyio
async def test_managed_agent_reconnects_through_every_failure_until_told_to_stop():
    make = _script(OSError("refused"), ConnectionClosed(1006), SessionRefused("revoked"),
                   RuntimeError("a bug"), Ending.CLOSED, Ending.UNINSTALL)
    backoff = Backoff(base=0.001, cap=0.002)
    assert await run_agent(make, attended=False, backoff=backoff) is Ending.UNINSTALL
    assert backoff.attempt == 5


@pytest.mark.anyio
async def test_attended_agent_ends_with_its_session_or_its_failure():
    assert await run_agent(_script(Ending.CLOSED), attended=True) is Ending.CLOSED
    with pytest.raises(SessionRefused):
        await run_agent(_script(SessionRefused("code already used")), attended=True)


@pytest.mark.anyio
async def test_attended_agent_tries_a_lost_connection_again_until_the_server_answers():
    backoff = Backoff(base=0.001, cap=0.002)
    with pytest.raises(SessionRefused):  # its code is used up: the end, in one line (cli)
        await run_agent(_script(_Session(ConnectionClosed(1001), connects=True),
                                OSError("server down"),
                                SessionRefused("support code already used")),
                        attended=True, backoff=backoff)
    assert backoff.attempt == 2
    with pytest.raises(OSError):  # never got through: the first failure is the answer
        await run_agent(_script(OSError("refused")), attended=True, backoff=backoff)


@pytest.mark.anyio
async def test_attended_agent_waits_out_a_busy_server_with_its_backoff():
    backoff = Backoff(base=0.001, cap=0.002)
    assert await run_agent(_script(ConnectionClosed(1013, "try again later"),
                                   ConnectionClosed(1013), Ending.CLOSED),
                           attended=True, backoff=backoff) is Ending.CLOSED
    assert backoff.attempt == 2
    with pytest.raises(ConnectionClosed):  # any other first failure still ends it
        await run_agent(_script(ConnectionClosed(1008)), attended=True, backoff=backoff)


@pytest.mark.skipif(sys.platform == "win32", reason="uvloop is no dependency on Windows")
def test_the_agent_runs_on_uvloop_where_it_is_installed():
    """As the server does: the agent's loop turns in C (``cli.event_loop_options``)."""
    import uvloop  # a dependency everywhere else: never skipped for want of it

    async def loop() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    assert isinstance(anyio.run(loop, backend_options=event_loop_options()), uvloop.Loop)

"""The reconnect loop: managed agents outlive failures, attended ones end with theirs."""

from __future__ import annotations

import pytest
from remote_agent.backoff import Backoff
from remote_agent.runner import run_agent
from remote_agent.session import Ending, Refused

from remote_core.wsclient import ConnectionClosed


class _Session:
    """Stands in for a connection whose outcome is scripted."""

    def __init__(self, outcome):
        self.outcome = outcome
        self.connected_at = None

    async def run(self):
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome


def _script(*outcomes):
    pending = list(outcomes)
    return lambda: _Session(pending.pop(0))


@pytest.mark.anyio
async def test_managed_agent_reconnects_through_every_failure_until_told_to_stop():
    make = _script(OSError("refused"), ConnectionClosed(1006), Refused("revoked"),
                   RuntimeError("a bug"), Ending.CLOSED, Ending.UNINSTALL)
    backoff = Backoff(base=0.001, cap=0.002)
    assert await run_agent(make, attended=False, backoff=backoff) is Ending.UNINSTALL
    assert backoff.attempt == 5


@pytest.mark.anyio
async def test_attended_agent_ends_with_its_session_or_its_failure():
    assert await run_agent(_script(Ending.CLOSED), attended=True) is Ending.CLOSED
    with pytest.raises(Refused):
        await run_agent(_script(Refused("code already used")), attended=True)

"""The agent's life: connect, serve, and for managed agents reconnect with backoff.

Attended agents serve exactly one session and end with it; managed agents
come back after every disconnect, refusal or network failure, waiting as
:class:`Backoff` says, until the server orders an uninstall or a restart, or
an update has been installed and the process must restart into it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import anyio

from remote_core.protocol import ProtocolError
from remote_core.wsclient import ConnectionClosed, HandshakeError

from .backoff import Backoff
from .session import AgentSession, Ending, Refused

__all__ = ["run_agent"]

log = logging.getLogger(__name__)

_FAILURES = (OSError, ConnectionClosed, HandshakeError, Refused, TimeoutError, ProtocolError)


async def run_agent(make_session: Callable[[], AgentSession], *, attended: bool,
                    backoff: Backoff | None = None) -> Ending:
    """Run sessions built by ``make_session()`` until the agent must stop.

    :returns: how the last session ended; an attended agent whose session
        could not start raises the failure instead.
    """
    backoff = backoff or Backoff()
    while True:
        session = make_session()
        try:
            ending = await session.run()
        except _FAILURES as exc:
            if attended:
                raise
            log.warning("connection failed: %s", exc)
            ending = Ending.CLOSED
        except Exception:  # a managed agent outlives any one session's failure
            if attended:
                raise
            log.exception("the session failed")
            ending = Ending.CLOSED
        finally:
            if session.connected_at is not None:
                backoff.connected(session.connected_at)
            backoff.disconnected(time.monotonic())
        if ending is not Ending.CLOSED or attended:
            return ending
        delay = backoff.next_delay()
        log.info("reconnecting in %.1f s", delay)
        await anyio.sleep(delay)

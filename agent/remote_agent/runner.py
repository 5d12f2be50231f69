"""The agent's life: connect, serve, and reconnect with backoff when a connection is lost.

Managed agents come back after every disconnect, refusal or network failure,
waiting as :class:`Backoff` says, until the server orders an uninstall or a
restart, or an update has been installed and the process must restart into it.
Attended agents serve one session: they end when the server ends it or
refuses them, and a connection lost under them is tried again the same way
(the server then answers whether the support code still holds), as is a first
connection the server closed with 1013 "try again later" (too many connections
awaiting their first message). A lost connection is one log line, never a
traceback.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import anyio

from remote_core.errors import SessionRefused
from remote_core.protocol import CloseCode, ProtocolError
from remote_core.wsclient import ConnectionClosed, HandshakeError

from .backoff import Backoff
from .session import AgentSession, Ending

__all__ = ["LOST", "run_agent"]

log = logging.getLogger(__name__)

LOST = (OSError, ConnectionClosed, HandshakeError, TimeoutError, ProtocolError)
"""How a connection fails on the way: worth another attempt."""

def _busy(exc: BaseException) -> bool:
    return isinstance(exc, ConnectionClosed) and exc.code == CloseCode.TRY_AGAIN_LATER


async def run_agent(make_session: Callable[[], AgentSession], *, attended: bool,
                    backoff: Backoff | None = None) -> Ending:
    """Run sessions built by ``make_session()`` until the agent must stop.

    :returns: how the last session ended; an attended agent raises a refusal,
        or the failure of a first connection that never got through.
    """
    backoff = backoff or Backoff()
    served = False
    while True:
        session = make_session()
        try:
            ending = await session.run()
            if ending is not Ending.CLOSED or attended:
                return ending
        except LOST as exc:
            connected = session.connected_at is not None
            if attended and not (served or connected or _busy(exc)):
                raise
            log.warning("connection %s: %s", "lost" if connected else "failed",
                        str(exc) or type(exc).__name__)
        except SessionRefused as exc:
            if attended:
                raise
            log.warning("the server refused the session: %s", exc)
        except Exception:  # a managed agent outlives any one session's failure
            if attended:
                raise
            log.exception("the session failed")
        finally:
            if session.connected_at is not None:
                served = True
                backoff.connected(session.connected_at)
            backoff.disconnected(time.monotonic())
        delay = backoff.next_delay()
        log.info("reconnecting in %.1f s", delay)
        await anyio.sleep(delay)

"""Protocol errors: the peer's fault (remote) versus ours (local), as in wsproto and h11."""

from __future__ import annotations

__all__ = ["CloseCode", "LocalProtocolError", "ProtocolError", "RemoteProtocolError"]


class CloseCode:
    """WebSocket close codes the protocol uses (RFC 6455 section 7.4.1)."""

    NORMAL = 1000
    GOING_AWAY = 1001
    UNSUPPORTED_DATA = 1003  # a text message where binary is required
    INVALID_PAYLOAD = 1007  # bytes that are not a Message
    POLICY_VIOLATION = 1008  # wrong first message, failed authentication, timeout
    TOO_BIG = 1009
    SERVICE_RESTART = 1012  # the session's server node went away (a cluster)
    TRY_AGAIN_LATER = 1013  # too many sockets awaiting their first message (T36)


class ProtocolError(Exception):
    """Base of protocol errors; ``close_code`` says how to end the socket."""

    def __init__(self, reason: str, close_code: int = CloseCode.POLICY_VIOLATION) -> None:
        super().__init__(reason)
        self.reason = reason
        self.close_code = close_code


class RemoteProtocolError(ProtocolError):
    """The peer broke the protocol; close the socket with ``close_code``."""


class LocalProtocolError(ProtocolError):
    """This side tried something the protocol does not allow in the current state (a bug)."""

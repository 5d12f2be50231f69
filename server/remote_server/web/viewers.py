"""How the relay checks a viewer's token: the one verifier every node uses."""

from __future__ import annotations

from remote_core.errors import SessionRefused

from ..relay.peer import ViewerVerifier
from .tokens import TokenError, TokenService

__all__ = ["viewer_verifier"]


def viewer_verifier(tokens: TokenService) -> ViewerVerifier:
    """``(token, session id or None) -> (user id, session id, password fingerprint,
    token generation)``."""

    def verify(token: str, session_id: str | None) -> tuple[str, str, str, int]:
        try:
            claims = tokens.verify_viewer(token, session_id)
        except TokenError as exc:
            raise SessionRefused(f"viewer token refused: {exc}") from None
        return (claims.user_id, claims.session_id, claims.password_version,
                claims.generation)

    return verify

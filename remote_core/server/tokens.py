"""Login tokens and viewer tokens: two kinds of JWT that never stand in for each other.

Each kind is signed with its own key derived from the server secret and
carries a ``purpose`` claim that its verifier checks, so a viewer token fails
on the HTTP API and a login token fails on the viewer socket even if one check
were lost. Both verifiers accept HS256 only (``alg=none`` and algorithm swaps
fail) and require ``exp`` and ``iat``.
"""

from __future__ import annotations

import hashlib
import hmac
import time
import uuid
from dataclasses import dataclass
from typing import Any

import jwt

from ..records import User

__all__ = ["LoginClaims", "TokenError", "TokenService", "ViewerClaims"]

ALGORITHMS = ["HS256"]
ISSUER = "remote-support"
LOGIN = "login"
VIEWER = "viewer"


class TokenError(Exception):
    """The token is missing, malformed, forged, expired or of the wrong kind.

    The message is safe to show to the client.
    """


@dataclass(frozen=True)
class LoginClaims:
    user_id: str
    password_version: str
    expires_at: int


@dataclass(frozen=True)
class ViewerClaims:
    user_id: str
    session_id: str
    tenant_id: str | None
    password_version: str
    """The user's password fingerprint when minted: a later password change voids it."""


def _derive(secret: str, purpose: str) -> bytes:
    return hmac.new(secret.encode(), f"remote-support token key: {purpose}".encode(),
                    hashlib.sha256).digest()


class TokenService:
    """Mints and verifies both kinds of token with keys derived from one secret."""

    def __init__(self, secret: str, login_ttl: int = 8 * 3600, viewer_ttl: int = 300) -> None:
        if not secret:
            raise ValueError("a token signing secret is required")
        self._keys = {LOGIN: _derive(secret, LOGIN), VIEWER: _derive(secret, VIEWER)}
        self.login_ttl = login_ttl
        self.viewer_ttl = viewer_ttl

    def _mint(self, purpose: str, ttl: int, claims: dict[str, Any]) -> str:
        now = int(time.time())
        payload = {"iss": ISSUER, "purpose": purpose, "iat": now, "exp": now + ttl,
                   "jti": uuid.uuid4().hex, **claims}
        return jwt.encode(payload, self._keys[purpose], algorithm="HS256",
                          headers={"typ": "JWT"})

    def _verify(self, purpose: str, token: str, required: list[str]) -> dict[str, Any]:
        try:
            claims: dict[str, Any] = jwt.decode(
                token, self._keys[purpose], algorithms=ALGORITHMS, issuer=ISSUER,
                options={"require": ["exp", "iat", "iss", "purpose", *required]},
            )
        except jwt.ExpiredSignatureError:
            raise TokenError("token has expired") from None
        except jwt.PyJWTError:
            raise TokenError(f"not a valid {purpose} token") from None
        if claims.get("purpose") != purpose:
            raise TokenError(f"not a valid {purpose} token")
        return claims

    # -- login ------------------------------------------------------------------
    def mint_login(self, user: User) -> str:
        return self._mint(LOGIN, self.login_ttl,
                          {"sub": user.id, "pwv": user.password_fingerprint})

    def verify_login(self, token: str) -> LoginClaims:
        claims = self._verify(LOGIN, token, ["sub", "pwv"])
        return LoginClaims(user_id=str(claims["sub"]), password_version=str(claims["pwv"]),
                           expires_at=int(claims["exp"]))

    # -- viewer (SPEC 5.3) ------------------------------------------------------
    def mint_viewer(self, session_id: str, user: User, tenant_id: str | None) -> str:
        return self._mint(VIEWER, self.viewer_ttl,
                          {"sub": user.id, "session_id": session_id, "tenant_id": tenant_id,
                           "pwv": user.password_fingerprint})

    def verify_viewer(self, token: str, session_id: str | None = None) -> ViewerClaims:
        """Raises :class:`TokenError` for any other kind, another session's token, or expiry."""
        claims = self._verify(VIEWER, token, ["sub", "session_id", "pwv"])
        if session_id is not None and not hmac.compare_digest(
                str(claims["session_id"]), session_id):
            raise TokenError("viewer token belongs to another session")
        tenant = claims.get("tenant_id")
        return ViewerClaims(user_id=str(claims["sub"]), session_id=str(claims["session_id"]),
                            tenant_id=str(tenant) if tenant is not None else None,
                            password_version=str(claims["pwv"]))

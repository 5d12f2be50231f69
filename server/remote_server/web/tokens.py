"""Login tokens and viewer tokens: two kinds of JWT that never stand in for each other.

Each kind is signed with its own key derived from the server secret and
carries a ``purpose`` claim that its verifier checks, so a viewer token fails
on the HTTP API and a login token fails on the viewer socket even if one check
were lost. Both verifiers accept HS256 only (``alg=none`` and algorithm swaps
fail) and require ``exp`` and ``iat``.

The secret is one of a :class:`KeyRing` (T17): every token names its key in a
``kid`` header; the current key signs, a rotated-out key verifies until its
``verify_until`` (the overlap, at least the longest token lifetime), and a
token whose ``kid`` is missing, not a string, unknown or past its overlap is
refused before its signature is looked at.
"""

from __future__ import annotations

import hashlib
import hmac
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jwt

from remote_core.errors import RemoteSupportError
from remote_core.records import SigningKey, User

__all__ = ["VIEWER_TOKEN_TTL", "KeyRing", "LoginClaims", "TokenError", "TokenService",
           "ViewerClaims", "key_id"]

VIEWER_TOKEN_TTL = 300  # SPEC 5.3, 8
ALGORITHMS = ["HS256"]
ISSUER = "remote-support"
LOGIN = "login"
VIEWER = "viewer"
SECOND_FACTOR_METHODS = frozenset({"otp", "hwk", "mfa"})  # mfa: a provider's (SSO)


class TokenError(RemoteSupportError):
    """The token is missing, malformed, forged, expired or of the wrong kind.

    The message is safe to show to the client.
    """


@dataclass(frozen=True)
class LoginClaims:
    user_id: str
    password_version: str
    expires_at: int
    generation: int = 0
    """The user's token generation when minted: a later logout or revocation voids it."""
    second_factor: bool = False
    """Whether the login proved a second factor (``amr`` holds ``otp``, ``hwk`` or ``mfa``)."""
    methods: tuple[str, ...] = ("pwd",)
    issued_at: int = 0
    token_id: str = ""


@dataclass(frozen=True)
class ViewerClaims:
    user_id: str
    session_id: str
    tenant_id: str | None
    password_version: str
    """The user's password fingerprint when minted: a later password change voids it."""
    generation: int = 0
    """The user's token generation when minted: a later logout or revocation voids it."""


def _derive(secret: str, purpose: str) -> bytes:
    return hmac.new(secret.encode(), f"remote-support token key: {purpose}".encode(),
                    hashlib.sha256).digest()


def key_id(secret: str) -> str:
    """The ``kid`` of a secret: a fingerprint that names it without revealing it, the same
    in every process (so processes seeding one ring at once agree)."""
    return hmac.new(secret.encode(), b"remote-support key id", hashlib.sha256).hexdigest()[:16]


class KeyRing:
    """The signing keys a server knows: the current one and those still in their overlap.

    :param clock: wall-clock seconds (``verify_until`` is a wall-clock time).
    """

    def __init__(self, keys: Sequence[SigningKey],
                 clock: Callable[[], float] = time.time) -> None:
        current = [k for k in keys if k.verify_until is None]
        if not current:
            raise ValueError("the key ring has no current key")
        self.current = max(current, key=lambda k: (k.created_at, k.kid))
        self._clock = clock
        self._keys = {k.kid: k for k in keys}
        self._derived = {(k.kid, purpose): _derive(k.secret, purpose)
                         for k in keys for purpose in (LOGIN, VIEWER)}

    @classmethod
    def single(cls, secret: str) -> KeyRing:
        """One key, named by its fingerprint: a configured secret, or a test's."""
        if not secret:
            raise ValueError("a token signing secret is required")
        return cls([SigningKey(kid=key_id(secret), secret=secret,
                               created_at=datetime.fromtimestamp(0, UTC))])

    @property
    def kids(self) -> list[str]:
        return list(self._keys)

    def signing(self, purpose: str) -> tuple[str, bytes]:
        """``(kid, key)`` that signs new tokens of ``purpose``."""
        return self.current.kid, self._derived[(self.current.kid, purpose)]

    def verifying(self, kid: object, purpose: str) -> bytes | None:
        """The key of ``kid`` for ``purpose`` while it may verify, else None."""
        if not isinstance(kid, str):
            return None
        key = self._keys.get(kid)
        if key is None:
            return None
        if key.verify_until is not None and self._clock() >= key.verify_until.timestamp():
            return None
        return self._derived[(kid, purpose)]


class TokenService:
    """Mints and verifies both kinds of token with keys derived from the ring's secrets.

    :param keys: the key ring, or one secret (a ring of one key).
    """

    def __init__(self, keys: KeyRing | str, login_ttl: int = 8 * 3600,
                 viewer_ttl: int = VIEWER_TOKEN_TTL) -> None:
        self.ring = keys if isinstance(keys, KeyRing) else KeyRing.single(keys)
        self.login_ttl = login_ttl
        self.viewer_ttl = viewer_ttl

    def signing_key(self, purpose: str) -> tuple[str, bytes]:
        """``(kid, key)`` of the current key for ``purpose`` (tests forge with it)."""
        return self.ring.signing(purpose)

    def _mint(self, purpose: str, ttl: int, claims: dict[str, Any]) -> str:
        now = int(time.time())
        payload = {"iss": ISSUER, "purpose": purpose, "iat": now, "exp": now + ttl,
                   "jti": uuid.uuid4().hex, **claims}
        kid, key = self.ring.signing(purpose)
        return jwt.encode(payload, key, algorithm="HS256", headers={"typ": "JWT", "kid": kid})

    def _verify(self, purpose: str, token: str, required: list[str]) -> dict[str, Any]:
        try:
            kid = jwt.get_unverified_header(token).get("kid")
        except jwt.PyJWTError:
            raise TokenError(f"not a valid {purpose} token") from None
        key = self.ring.verifying(kid, purpose)
        if key is None:
            raise TokenError(f"not a valid {purpose} token (its signing key is unknown or "
                             "retired)")
        try:
            claims: dict[str, Any] = jwt.decode(
                token, key, algorithms=ALGORITHMS, issuer=ISSUER,
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
    def mint_login(self, user: User, *, generation: int = 0,
                   methods: Sequence[str] = ("pwd",), token_id: str | None = None) -> str:
        """``methods`` become the RFC 8176 ``amr`` claim: ``pwd``, then ``otp`` (TOTP or a
        recovery code) or ``hwk`` (a passkey) when a second factor was proved.
        ``token_id`` (the ``jti``) names the login session the token belongs to."""
        claims: dict[str, Any] = {"sub": user.id, "pwv": user.password_fingerprint,
                                  "gen": generation, "amr": list(methods)}
        if token_id is not None:
            claims["jti"] = token_id
        return self._mint(LOGIN, self.login_ttl, claims)

    def verify_login(self, token: str) -> LoginClaims:
        claims = self._verify(LOGIN, token, ["sub", "pwv"])
        amr = claims.get("amr")
        methods = tuple(str(m) for m in amr) if isinstance(amr, list) else ("pwd",)
        return LoginClaims(user_id=str(claims["sub"]), password_version=str(claims["pwv"]),
                           expires_at=int(claims["exp"]), generation=_generation(claims),
                           second_factor=bool(SECOND_FACTOR_METHODS & set(methods)),
                           methods=methods, issued_at=int(claims["iat"]),
                           token_id=str(claims.get("jti", "")))

    # -- viewer (SPEC 5.3) ------------------------------------------------------
    def mint_viewer(self, session_id: str, user: User, tenant_id: str | None,
                    generation: int = 0) -> str:
        return self._mint(VIEWER, self.viewer_ttl,
                          {"sub": user.id, "session_id": session_id, "tenant_id": tenant_id,
                           "pwv": user.password_fingerprint, "gen": generation})

    def verify_viewer(self, token: str, session_id: str | None = None) -> ViewerClaims:
        """Raises :class:`TokenError` for any other kind, another session's token, or expiry."""
        claims = self._verify(VIEWER, token, ["sub", "session_id", "pwv"])
        if session_id is not None and not hmac.compare_digest(
                str(claims["session_id"]), session_id):
            raise TokenError("viewer token belongs to another session")
        tenant = claims.get("tenant_id")
        return ViewerClaims(user_id=str(claims["sub"]), session_id=str(claims["session_id"]),
                            tenant_id=str(tenant) if tenant is not None else None,
                            password_version=str(claims["pwv"]),
                            generation=_generation(claims))


def _generation(claims: dict[str, Any]) -> int:
    """The ``gen`` claim; tokens minted before generations existed carry generation 0."""
    value = claims.get("gen", 0)
    if not isinstance(value, int) or isinstance(value, bool):
        raise TokenError("not a valid token (its generation is malformed)")
    return value

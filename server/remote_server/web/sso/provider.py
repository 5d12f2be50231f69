"""Talking to the identity provider: discovery, the code exchange, the ID token check,
and the userinfo endpoint for claims a provider keeps out of the ID token.

The signature check is PyJWT's (:class:`jwt.PyJWKClient` on the provider's JWKS);
nothing here does cryptography by hand.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import anyio
import jwt

from remote_core.errors import RemoteSupportError

from .config import OidcConfig

if TYPE_CHECKING:
    import httpx

__all__ = ["OidcError", "Provider", "Tokens", "pkce_pair"]

ALGORITHMS = ["RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512",
              "EdDSA"]
"""Asymmetric algorithms only: an HMAC or ``none`` token is refused."""
TIMEOUT = 10.0


class OidcError(RemoteSupportError):
    """The provider answered something a login cannot go on with (said without secrets)."""


def pkce_pair() -> tuple[str, str]:
    """A PKCE code verifier and its S256 challenge (RFC 7636)."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


@dataclass(frozen=True)
class _Metadata:
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    userinfo_endpoint: str | None


@dataclass(frozen=True, repr=False)
class Tokens:
    """What the token endpoint answered: the ID token, and the access token that reads
    the userinfo endpoint (``None`` when the provider sent none)."""

    id_token: str
    access_token: str | None

    def __repr__(self) -> str:  # tokens never reach a log line
        return "Tokens(...)"


class Provider:
    """One OpenID provider, its metadata fetched on first use and kept."""

    def __init__(self, config: OidcConfig) -> None:
        self.config = config
        self._ssl = ssl.create_default_context(cafile=config.ca_file)
        self._metadata: _Metadata | None = None
        self._jwks: jwt.PyJWKClient | None = None

    async def metadata(self) -> _Metadata:
        """``/.well-known/openid-configuration``, whose issuer must be the configured one."""
        if self._metadata is None:
            url = self.config.issuer + "/.well-known/openid-configuration"
            data = await self._get_json(url)
            if str(data.get("issuer", "")).rstrip("/") != self.config.issuer:
                raise OidcError("the provider's discovery document names another issuer")
            try:
                userinfo = data.get("userinfo_endpoint")
                self._metadata = _Metadata(str(data["authorization_endpoint"]),
                                           str(data["token_endpoint"]), str(data["jwks_uri"]),
                                           str(userinfo) if userinfo else None)
            except KeyError as exc:
                raise OidcError(f"the provider's discovery document lacks {exc}") from None
            self._jwks = jwt.PyJWKClient(self._metadata.jwks_uri, ssl_context=self._ssl,
                                         timeout=TIMEOUT)
        return self._metadata

    async def authorization_url(self, state: str, nonce: str, challenge: str) -> str:
        meta = await self.metadata()
        query = urlencode({
            "response_type": "code", "client_id": self.config.client_id,
            "redirect_uri": self.config.redirect_url, "scope": " ".join(self.config.scopes),
            "state": state, "nonce": nonce, "code_challenge": challenge,
            "code_challenge_method": "S256"})
        separator = "&" if "?" in meta.authorization_endpoint else "?"
        return meta.authorization_endpoint + separator + query

    async def exchange(self, code: str, verifier: str) -> Tokens:
        """The tokens for an authorization code (client secret in HTTP Basic auth)."""
        meta = await self.metadata()
        form = {"grant_type": "authorization_code", "code": code,
                "redirect_uri": self.config.redirect_url, "code_verifier": verifier}
        import httpx  # here, not at start-up: only a server signing in over SSO needs it

        async with httpx.AsyncClient(verify=self._ssl, timeout=TIMEOUT) as client:
            try:
                answer = await client.post(
                    meta.token_endpoint, data=form,
                    auth=(self.config.client_id, self.config.client_secret))
            except httpx.HTTPError as exc:
                raise OidcError(f"the provider's token endpoint is unreachable "
                                f"({type(exc).__name__})") from None
        if answer.status_code != 200:
            raise OidcError(f"the provider refused the authorization code "
                            f"(HTTP {answer.status_code})")
        data = _json(answer)
        token, access = data.get("id_token"), data.get("access_token")
        if not isinstance(token, str):
            raise OidcError("the provider's token answer has no id_token")
        return Tokens(token, access if isinstance(access, str) and access else None)

    async def claims(self, tokens: Tokens, nonce: str) -> dict[str, Any]:
        """The verified ID token's claims, completed from the userinfo endpoint when the
        username or groups claim is missing from it: a provider may keep the claims a
        scope asks for out of the ID token (OIDC Core 5.4), as certified ones do by
        default. Userinfo must name the same ``sub`` and gives those two claims only
        (never ``amr``, which says how the user signed in: the ID token's alone)."""
        claims = await self.verify(tokens.id_token, nonce)
        wanted = (self.config.username_claim, self.config.groups_claim)
        meta = await self.metadata()
        if all(name in claims for name in wanted) or tokens.access_token is None \
                or meta.userinfo_endpoint is None:
            return claims
        info = await self._get_json(meta.userinfo_endpoint,
                                    {"Authorization": f"Bearer {tokens.access_token}"})
        if info.get("sub") != claims["sub"]:
            raise OidcError("the provider's userinfo names another subject than the ID token")
        return {**claims, **{name: info[name] for name in wanted
                             if name not in claims and name in info}}

    async def verify(self, id_token: str, nonce: str) -> dict[str, Any]:
        """The ID token's claims once signature, issuer, audience, expiry and nonce hold."""
        await self.metadata()
        assert self._jwks is not None
        jwks = self._jwks
        try:
            key = await anyio.to_thread.run_sync(_signing_key, jwks, id_token)
            claims: dict[str, Any] = jwt.decode(
                id_token, key.key, algorithms=ALGORITHMS, audience=self.config.client_id,
                issuer=self.config.issuer, leeway=30,
                options={"require": ["iss", "aud", "exp", "iat", "sub"]})
        except jwt.PyJWTError as exc:
            raise OidcError(f"the ID token is not valid: {exc}") from None
        if not secrets.compare_digest(str(claims.get("nonce", "")), nonce):
            raise OidcError("the ID token's nonce is not this login's")
        return claims

    async def _get_json(self, url: str,
                        headers: dict[str, str] | None = None) -> dict[str, Any]:
        import httpx  # see exchange()

        async with httpx.AsyncClient(verify=self._ssl, timeout=TIMEOUT) as client:
            try:
                answer = await client.get(url, headers=headers)
            except httpx.HTTPError as exc:
                raise OidcError(f"the provider is unreachable at {url} "
                                f"({type(exc).__name__})") from None
        if answer.status_code != 200:
            raise OidcError(f"the provider answered HTTP {answer.status_code} at {url}")
        return _json(answer)


def _signing_key(jwks: jwt.PyJWKClient, id_token: str) -> jwt.PyJWK:
    """The JWKS key named by the token's ``kid``; a token without one is accepted only
    from a provider publishing a single signing key (OIDC Core 10.1)."""
    if jwt.get_unverified_header(id_token).get("kid") is not None:
        return jwks.get_signing_key_from_jwt(id_token)
    keys = jwks.get_signing_keys()
    if len(keys) != 1:
        raise jwt.PyJWKClientError("the ID token names no key and the provider has several")
    return keys[0]


def _json(answer: httpx.Response) -> dict[str, Any]:
    try:
        data = answer.json()
    except ValueError:
        raise OidcError("the provider answered something that is not JSON") from None
    if not isinstance(data, dict):
        raise OidcError("the provider answered something that is not a JSON object")
    return data

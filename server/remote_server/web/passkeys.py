"""Passkeys (WebAuthn) as a second factor, on the ``webauthn`` library (py_webauthn).

The relying party is the server as its users' browsers reach it: the host of the
first of ``REMOTE_SUPPORT_PUBLIC_ORIGINS`` (those origins are the ones accepted),
else the request's own ``Host`` when it names this server (:mod:`.origin`), http or
https. WebAuthn refuses IP addresses as relying party ids, so a console opened at an
address cannot use passkeys (409 ``passkeys-unavailable``).

Every ceremony's challenge is kept in the store (not process memory, so a login
started on one node finishes on another), bound to one user and one purpose
(``register`` or ``login``), for :data:`CHALLENGE_SECONDS`, and used up by the one
conditional delete that checks it. An assertion's signature counter must rise past
the stored one (the library checks it; both 0 means the authenticator keeps no
counter), and the store moves the counter in one conditional update, so of two
logins with one credential at the same moment only one passes.
"""

from __future__ import annotations

import ipaddress
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    options_to_json,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers import base64url_to_bytes, bytes_to_base64url
from webauthn.helpers.exceptions import WebAuthnException
from webauthn.helpers.structs import (
    AuthenticatorSelectionCriteria,
    AuthenticatorTransport,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from remote_core.interfaces import Store
from remote_core.records import Passkey, User, WebAuthnChallenge, utcnow

from ..settings import ServerSettings
from .origin import DEFAULT_PORTS, PUBLIC_ORIGINS_SETTING, names_this_server
from .problem import Problem

__all__ = ["CHALLENGE_SECONDS", "RP_NAME", "RelyingParty", "check_assertion",
           "login_options", "register", "registration_options", "relying_party"]

CHALLENGE_SECONDS = 180
"""How long a challenge may be answered (the browser is told the same, in ms)."""
RP_NAME = "Remote support"
REGISTER = "register"
LOGIN = "login"
_TRANSPORTS = {t.value: t for t in AuthenticatorTransport}
_UNAVAILABLE = "passkeys-unavailable"


@dataclass(frozen=True)
class RelyingParty:
    """Who the browser's credentials are scoped to, and the page origins accepted."""

    id: str
    origins: tuple[str, ...]


def _headers(scope: Mapping[str, Any]) -> dict[str, str]:
    return {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _unavailable(why: str) -> Problem:
    return Problem(409, f"passkeys are unavailable here: {why}; open the console at the "
                        f"server's host name, or set {PUBLIC_ORIGINS_SETTING} to the "
                        "console's origin", kind=_UNAVAILABLE)


def relying_party(settings: ServerSettings, scope: Mapping[str, Any]) -> RelyingParty:
    """The relying party of a request; 409 ``passkeys-unavailable`` when WebAuthn would
    refuse it (an IP address) or the ``Host`` does not name this server."""
    if settings.public_origins:
        origins = tuple(o.strip().rstrip("/") for o in settings.public_origins)
        name = urlsplit(origins[0]).hostname or ""
    else:
        host = _headers(scope).get("host", "").strip()
        if not names_this_server(host, settings):
            raise _unavailable("the request's Host does not name this server")
        try:
            parts = urlsplit("//" + host)
            name, port = parts.hostname or "", parts.port
        except ValueError:
            raise _unavailable("the request's Host is not a host name") from None
        origins = tuple(f"{scheme}://{name}" + ("" if port in (None, default) else f":{port}")
                        for scheme, default in DEFAULT_PORTS.items())
    if not name or _is_address(name):
        raise _unavailable(f"the server is reached at an address ({name or 'none'}), and "
                           "WebAuthn needs a host name")
    return RelyingParty(id=name, origins=origins)


def _descriptors(keys: Sequence[Passkey]) -> list[PublicKeyCredentialDescriptor]:
    return [PublicKeyCredentialDescriptor(
        id=base64url_to_bytes(key.credential_id),
        transports=[_TRANSPORTS[t] for t in key.transports if t in _TRANSPORTS] or None)
        for key in keys]


async def _challenge(store: Store, user: User, purpose: str, challenge: bytes) -> None:
    await store.add_webauthn_challenge(WebAuthnChallenge(
        challenge=bytes_to_base64url(challenge), user_id=user.id, purpose=purpose,
        expires_at=utcnow() + timedelta(seconds=CHALLENGE_SECONDS)))


async def registration_options(store: Store, user: User, rp: RelyingParty) -> dict[str, Any]:
    """``PublicKeyCredentialCreationOptions`` in their JSON form, for
    ``navigator.credentials.create``; the user's passkeys are excluded (one credential
    per authenticator)."""
    options = generate_registration_options(
        rp_id=rp.id, rp_name=RP_NAME, user_name=user.username, user_id=user.id.encode(),
        user_display_name=user.username, timeout=CHALLENGE_SECONDS * 1000,
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.PREFERRED,
            user_verification=UserVerificationRequirement.PREFERRED),
        exclude_credentials=_descriptors(await store.list_passkeys(user.id)))
    await _challenge(store, user, REGISTER, options.challenge)
    answer: dict[str, Any] = json.loads(options_to_json(options))
    return answer


async def login_options(store: Store, user: User, rp: RelyingParty,
                        keys: Sequence[Passkey]) -> dict[str, Any]:
    """``PublicKeyCredentialRequestOptions`` in their JSON form, for
    ``navigator.credentials.get``, allowing the user's passkeys."""
    options = generate_authentication_options(
        rp_id=rp.id, timeout=CHALLENGE_SECONDS * 1000, allow_credentials=_descriptors(keys),
        user_verification=UserVerificationRequirement.PREFERRED)
    await _challenge(store, user, LOGIN, options.challenge)
    answer: dict[str, Any] = json.loads(options_to_json(options))
    return answer


def _answered_challenge(credential: Mapping[str, Any]) -> str | None:
    """The challenge the browser signed, read from the client data (checked again, with
    everything else, by the library)."""
    try:
        client_data = json.loads(base64url_to_bytes(credential["response"]["clientDataJSON"]))
        challenge = client_data["challenge"]
    except (ValueError, KeyError, TypeError):
        return None
    return challenge if isinstance(challenge, str) and 0 < len(challenge) <= 128 else None


async def register(store: Store, user: User, rp: RelyingParty, credential: Mapping[str, Any],
                   name: str) -> Passkey:
    """Verify a ``navigator.credentials.create`` answer to a challenge of ``user``'s and
    record the passkey; 422 when it does not verify, 409 when it is registered already."""
    challenge = _answered_challenge(credential)
    if challenge is None or not await store.take_webauthn_challenge(challenge, user.id,
                                                                    REGISTER):
        raise _invalid("it answers no challenge this server gave this account for "
                       "registering, or one that expired or was used: start again")
    try:
        verified = verify_registration_response(
            credential=dict(credential), expected_challenge=base64url_to_bytes(challenge),
            expected_rp_id=rp.id, expected_origin=list(rp.origins))
    except (WebAuthnException, ValueError, KeyError, TypeError) as exc:
        raise _invalid(f"it does not verify ({_reason(exc)})") from None
    transports = credential["response"].get("transports") or []
    passkey = Passkey(
        id=str(uuid.uuid4()), user_id=user.id,
        credential_id=bytes_to_base64url(verified.credential_id),
        public_key=verified.credential_public_key, sign_count=verified.sign_count,
        name=name, created_at=utcnow(),
        transports=tuple(t for t in transports if t in _TRANSPORTS))
    await store.add_passkey(passkey)
    return passkey


async def check_assertion(store: Store, user: User, rp: RelyingParty,
                          credential: Mapping[str, Any]) -> bool:
    """Whether ``credential`` (a ``navigator.credentials.get`` answer) proves one of
    ``user``'s passkeys: it answers an unexpired login challenge handed to ``user``
    (used up here, right or wrong), verifies, and its counter rises."""
    challenge = _answered_challenge(credential)
    if challenge is None or not await store.take_webauthn_challenge(challenge, user.id, LOGIN):
        return False
    passkey = next((k for k in await store.list_passkeys(user.id)
                    if k.credential_id == credential.get("rawId")), None)
    if passkey is None:
        return False
    try:
        verified = verify_authentication_response(
            credential=dict(credential), expected_challenge=base64url_to_bytes(challenge),
            expected_rp_id=rp.id, expected_origin=list(rp.origins),
            credential_public_key=passkey.public_key,
            credential_current_sign_count=passkey.sign_count)
    except (WebAuthnException, ValueError, KeyError, TypeError):
        return False
    return await store.use_passkey(passkey.id, passkey.sign_count, verified.new_sign_count)


def _reason(exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]


def _invalid(why: str) -> Problem:
    return Problem(422, f"body field 'credential': {why}",
                   extra={"errors": [{"field": "credential", "message": why}]})

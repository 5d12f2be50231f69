"""A WebAuthn authenticator in software, for API tests that speak to a real server without
a browser: an ES256 (P-256) key pair, ``none`` attestation, a signature counter, and the
client data a browser would write for a page at ``origin``.

It answers the options the server hands out exactly as ``navigator.credentials.create``
and ``.get`` would (their ``toJSON()`` form), so the server's verification runs for real;
the browser's own path is tested in Chromium with its virtual authenticator.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from webauthn.helpers import bytes_to_base64url, encode_cbor

__all__ = ["SoftAuthenticator"]

_UP, _UV, _AT = 0x01, 0x04, 0x40  # authenticator data flags: presence, verified, attested


def _b64(data: bytes) -> str:
    return bytes_to_base64url(data)


class SoftAuthenticator:
    """One credential on one authenticator; ``sign_count`` rises by one per assertion."""

    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.credential_id = os.urandom(32)
        self.sign_count = 0

    def _client_data(self, kind: str, options: dict[str, Any]) -> bytes:
        return json.dumps({"type": kind, "challenge": options["challenge"],
                           "origin": self.origin, "crossOrigin": False}).encode()

    def _cose_key(self) -> bytes:
        numbers = self.key.public_key().public_numbers()
        return encode_cbor({1: 2, 3: -7, -1: 1, -2: numbers.x.to_bytes(32, "big"),
                            -3: numbers.y.to_bytes(32, "big")})

    def create(self, options: dict[str, Any], *, rp_id: str | None = None) -> dict[str, Any]:
        """The answer to registration ``options`` (``rp_id`` overrides theirs, to forge)."""
        rp_hash = hashlib.sha256((rp_id or options["rp"]["id"]).encode()).digest()
        attested = (bytes(16) + len(self.credential_id).to_bytes(2, "big")
                    + self.credential_id + self._cose_key())
        auth_data = (rp_hash + bytes([_UP | _UV | _AT]) + self.sign_count.to_bytes(4, "big")
                     + attested)
        attestation = encode_cbor({"fmt": "none", "attStmt": {}, "authData": auth_data})
        return {"id": _b64(self.credential_id), "rawId": _b64(self.credential_id),
                "type": "public-key",
                "response": {"clientDataJSON": _b64(self._client_data("webauthn.create",
                                                                      options)),
                             "attestationObject": _b64(attestation),
                             "transports": ["internal"]},
                "authenticatorAttachment": "platform", "clientExtensionResults": {}}

    def get(self, options: dict[str, Any], *, count: int | None = None) -> dict[str, Any]:
        """The answer to login ``options``; ``count`` sends that counter instead of the
        next one (a cloned authenticator)."""
        if count is None:
            self.sign_count += 1
            count = self.sign_count
        client_data = self._client_data("webauthn.get", options)
        auth_data = (hashlib.sha256(options["rpId"].encode()).digest() + bytes([_UP | _UV])
                     + count.to_bytes(4, "big"))
        signature = self.key.sign(auth_data + hashlib.sha256(client_data).digest(),
                                  ec.ECDSA(hashes.SHA256()))
        return {"id": _b64(self.credential_id), "rawId": _b64(self.credential_id),
                "type": "public-key",
                "response": {"clientDataJSON": _b64(client_data),
                             "authenticatorData": _b64(auth_data),
                             "signature": _b64(signature)},
                "authenticatorAttachment": "platform", "clientExtensionResults": {}}

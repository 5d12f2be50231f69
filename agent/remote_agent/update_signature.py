"""The publisher's Ed25519 signature over a release, checked against the key pinned in the config.

The signature travels next to the artifact as ``<download_url>.sig`` (base64 of
the 64 signature bytes, as ``remote-support release sign`` writes it). With a
key pinned, a server that is compromised can still offer a download, but not
one that this agent installs.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

__all__ = ["SignatureError", "load_public_key", "verify_file"]


class SignatureError(Exception):
    """The artifact is not signed by the pinned publisher key."""


def load_public_key(text: str) -> Ed25519PublicKey:
    """The pinned key: base64 of the 32 raw Ed25519 public-key bytes."""
    try:
        raw = base64.b64decode(text.strip(), validate=True)
        return Ed25519PublicKey.from_public_bytes(raw)
    except (binascii.Error, ValueError):
        raise ValueError("update_public_key must be base64 of a 32-byte Ed25519 "
                         "public key") from None


def verify_file(key: Ed25519PublicKey, path: Path, signature_text: bytes) -> None:
    try:
        signature = base64.b64decode(signature_text.strip(), validate=True)
    except binascii.Error:
        raise SignatureError("the release signature is not base64") from None
    try:
        key.verify(signature, path.read_bytes())
    except InvalidSignature:
        raise SignatureError("the release signature does not match the pinned "
                             "publisher key") from None

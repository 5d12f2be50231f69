"""Time-based one-time passwords (RFC 6238 over RFC 4226 HOTP), HMAC-SHA1, 30 s, 6 digits:
what every authenticator app speaks. Small enough to own rather than depend on."""

from __future__ import annotations

import base64
import hmac
import secrets
import struct
import time
from urllib.parse import quote, urlencode

__all__ = ["DIGITS", "STEP", "hotp", "new_secret", "provisioning_uri", "totp", "verify"]

STEP = 30
DIGITS = 6
DRIFT_STEPS = 1
"""Codes of the step before and after are accepted too: clocks drift, people type slowly."""


def new_secret() -> str:
    """A fresh 160-bit secret in unpadded base32 (RFC 4226 recommends 160 bits)."""
    return base64.b32encode(secrets.token_bytes(20)).decode().rstrip("=")


def _key(secret: str) -> bytes:
    cleaned = secret.replace(" ", "").upper()
    return base64.b32decode(cleaned + "=" * (-len(cleaned) % 8))


def hotp(key: bytes, counter: int, digits: int = DIGITS, digest: str = "sha1") -> str:
    """RFC 4226 section 5.3: dynamic truncation of HMAC(key, counter)."""
    mac = hmac.new(key, struct.pack(">Q", counter), digest).digest()
    offset = mac[-1] & 0x0F
    number = struct.unpack(">I", mac[offset:offset + 4])[0] & 0x7FFFFFFF
    return str(number % 10 ** digits).zfill(digits)


def totp(secret: str, at: float | None = None) -> str:
    """The code of ``secret`` (base32) at ``at`` (now by default)."""
    now = time.time() if at is None else at
    return hotp(_key(secret), int(now // STEP))


def verify(secret: str, code: str, at: float | None = None) -> int | None:
    """The time step ``code`` matches within the drift window, else None.

    The caller refuses a step it has seen used (a code works once)."""
    code = code.strip().replace(" ", "")
    if len(code) != DIGITS or not (code.isascii() and code.isdigit()):
        return None
    now = time.time() if at is None else at
    step = int(now // STEP)
    key = _key(secret)
    for candidate in range(step - DRIFT_STEPS, step + DRIFT_STEPS + 1):
        if hmac.compare_digest(hotp(key, candidate), code):
            return candidate
    return None


def provisioning_uri(secret: str, account: str, issuer: str = "Remote Support") -> str:
    """The ``otpauth://`` URI an authenticator app scans from a QR code."""
    label = quote(f"{issuer}:{account}")
    return f"otpauth://totp/{label}?" + urlencode(
        {"secret": secret, "issuer": issuer, "algorithm": "SHA1", "digits": DIGITS,
         "period": STEP})



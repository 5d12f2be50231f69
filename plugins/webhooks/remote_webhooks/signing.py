"""The webhook signature: HMAC-SHA256 over ``timestamp + "." + body``.

Receivers recompute it with the target's secret, compare in constant time, and
refuse a timestamp too far from their clock (a captured request replayed later).
"""

from __future__ import annotations

import hashlib
import hmac

__all__ = ["SIGNATURE_HEADER", "TIMESTAMP_HEADER", "sign", "verify"]

TIMESTAMP_HEADER = "X-Remote-Support-Timestamp"
SIGNATURE_HEADER = "X-Remote-Support-Signature"
PREFIX = "sha256="


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The ``X-Remote-Support-Signature`` value: ``sha256=<hex>``."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return PREFIX + mac.hexdigest()


def verify(secret: str, timestamp: str, body: bytes, signature: str, *, now: float,
           tolerance: float = 300.0) -> bool:
    """True when ``signature`` is ours for this timestamp and body, and the timestamp
    lies within ``tolerance`` seconds of ``now`` (Unix time)."""
    try:
        sent = int(timestamp)
    except ValueError:
        return False
    if abs(now - sent) > tolerance:
        return False
    return hmac.compare_digest(sign(secret, timestamp, body), signature)

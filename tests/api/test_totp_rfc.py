"""TOTP against the test vectors of RFC 6238 appendix B (SHA-1, 8 digits) and RFC 4226
appendix D, and the drift window the server accepts."""

from __future__ import annotations

import base64

import pytest
from remote_server.web import totp

RFC_SECRET = b"12345678901234567890"


@pytest.mark.parametrize(("at", "expected"), [
    (59, "94287082"), (1111111109, "07081804"), (1111111111, "14050471"),
    (1234567890, "89005924"), (2000000000, "69279037"), (20000000000, "65353130"),
])
def test_rfc6238_appendix_b_sha1(at: int, expected: str) -> None:
    assert totp.hotp(RFC_SECRET, at // 30, digits=8) == expected


def test_rfc4226_appendix_d() -> None:
    expected = ["755224", "287082", "359152", "969429", "338314", "254676", "287922",
                "162583", "399871", "520489"]
    assert [totp.hotp(RFC_SECRET, i) for i in range(10)] == expected


def test_verify_accepts_one_step_of_drift_and_nothing_else() -> None:
    secret = base64.b32encode(RFC_SECRET).decode()
    at = 1111111111.0
    step = int(at // 30)
    assert totp.verify(secret, totp.totp(secret, at), at) == step
    assert totp.verify(secret, totp.totp(secret, at - 30), at) == step - 1
    assert totp.verify(secret, totp.totp(secret, at + 30), at) == step + 1
    assert totp.verify(secret, totp.totp(secret, at - 90), at) is None
    for bad in ("", "12345", "1234567", "abcdef", "\uff11\uff12\uff13\uff14\uff15\uff16"):
        assert totp.verify(secret, bad, at) is None


def test_new_secrets_are_random_and_scannable() -> None:
    first, second = totp.new_secret(), totp.new_secret()
    assert first != second and len(first) == 32
    uri = totp.provisioning_uri(first, "alice")
    assert uri.startswith("otpauth://totp/Remote%20Support%3Aalice?secret=" + first)

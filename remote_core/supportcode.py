"""Support codes ``XXX-XXX-XXX`` (SPEC 8): 31 symbols, each drawn uniformly by ``secrets``.

The alphabet leaves out 0, O, 1, I and L, which are read out wrongly over the
phone; nine symbols give 31**9, about 44.6 bits.
"""

from __future__ import annotations

import re
import secrets

__all__ = ["ALPHABET", "CODE_PATTERN", "generate_support_code", "masked", "normalize_support_code"]

ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
CODE_PATTERN = re.compile(rf"^[{ALPHABET}]{{3}}-[{ALPHABET}]{{3}}-[{ALPHABET}]{{3}}$")

assert len(ALPHABET) == 31 and not set("0O1IL") & set(ALPHABET)


def generate_support_code() -> str:
    symbols = "".join(secrets.choice(ALPHABET) for _ in range(9))
    return f"{symbols[0:3]}-{symbols[3:6]}-{symbols[6:9]}"


def normalize_support_code(text: str) -> str | None:
    """The canonical form of what a person typed (case and spaces forgiven), or ``None``.

    ASCII only: Unicode upper-casing turns other letters into the alphabet's
    (the long s U+017F upper-cases to S, the ligature U+FB00 to FF), which the socket's rate
    limiter (``relay.auth.looks_like_support_code``) does not take for a code.
    """
    code = text.strip()
    if not code.isascii():
        return None
    code = code.upper().replace(" ", "")
    if len(code) == 9 and "-" not in code:
        code = f"{code[0:3]}-{code[3:6]}-{code[6:9]}"
    return code if CODE_PATTERN.match(code) else None


def masked(code: str) -> str:
    """A code as the audit log names it: enough to tell codes apart, never enough to use."""
    return f"***-***-{code[-3:]}"

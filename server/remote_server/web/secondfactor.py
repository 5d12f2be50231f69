"""The second factor of a login: who must have one, checking a TOTP or recovery code, and
making recovery codes (shown once, stored as Argon2id hashes like passwords)."""

from __future__ import annotations

import secrets

from remote_core.interfaces import Store
from remote_core.records import SecondFactors, User

from ..settings import ServerSettings
from . import totp
from .users import check_password, hash_password

__all__ = ["RECOVERY_CODES", "check_code", "new_recovery_codes", "required_for"]

RECOVERY_CODES = 10
_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"  # no 0/o, 1/l/i to misread


def required_for(settings: ServerSettings, user: User) -> bool:
    """Whether the server's policy requires ``user`` to log in with a second factor."""
    policy = settings.require_second_factor
    return policy == "all" or (policy == "admin" and user.is_admin)


def _recovery_code() -> str:
    raw = "".join(secrets.choice(_ALPHABET) for _ in range(10))
    return f"{raw[:5]}-{raw[5:]}"


async def new_recovery_codes() -> tuple[list[str], list[str]]:
    """``(codes, hashes)``: the codes to show once and the hashes to store."""
    codes = [_recovery_code() for _ in range(RECOVERY_CODES)]
    return codes, [await hash_password(_normal(code)) for code in codes]


def _normal(code: str) -> str:
    """Case, spaces and the dash do not matter when a code is typed back."""
    return code.strip().lower().replace(" ", "").replace("-", "")


async def check_code(store: Store, factors: SecondFactors, *, otp: str | None,
                     recovery_code: str | None) -> str | None:
    """The ``amr`` method a good code proves (``otp``), else None. A TOTP code's time step
    and a recovery code are used up here, so each works once."""
    if factors.totp_secret is None:
        return None
    if otp is not None:
        step = totp.verify(factors.totp_secret, otp)
        if step is None or not await store.use_totp_step(factors.user_id, step):
            return None  # wrong, or used already (a code works once)
        return "otp"
    if recovery_code is not None:
        given = _normal(recovery_code)
        for stored in factors.recovery_hashes:
            if await check_password(stored, given):
                if await store.consume_recovery_code(factors.user_id, stored):
                    return "otp"
                return None  # another login used it at the same moment
    return None

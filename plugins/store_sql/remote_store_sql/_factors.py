"""Second factors and token generations: one synchronous operation per Store method."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from remote_core.errors import ConflictError
from remote_core.records import LoginSession, Passkey, SecondFactors, WebAuthnChallenge, utcnow

from ._schema import (
    login_sessions,
    passkeys,
    recovery_codes,
    user_factors,
    users,
    webauthn_challenges,
)
from ._sql import insert

__all__ = [
    "add_login_session",
    "add_passkey",
    "add_webauthn_challenge",
    "bump_token_generation",
    "consume_recovery_code",
    "delete_passkeys",
    "end_login_sessions",
    "get_login_session",
    "get_second_factors",
    "list_login_sessions",
    "list_passkeys",
    "set_totp",
    "take_webauthn_challenge",
    "use_passkey",
    "use_totp_step",
]


def get_second_factors(conn: Connection, user_id: str) -> SecondFactors:
    row = conn.execute(sa.select(user_factors).where(user_factors.c.user_id == user_id)).first()
    hashes = conn.execute(sa.select(recovery_codes.c.code_hash)
                          .where(recovery_codes.c.user_id == user_id)
                          .order_by(recovery_codes.c.code_hash)).scalars().all()
    if row is None:
        return SecondFactors(user_id=user_id, recovery_hashes=tuple(hashes))
    return SecondFactors(user_id=user_id, totp_secret=row.totp_secret,
                         recovery_hashes=tuple(hashes), token_generation=row.token_generation)


def _ensure_row(conn: Connection, user_id: str) -> None:
    if conn.execute(sa.select(users.c.id).where(users.c.id == user_id)).first() is None:
        raise ConflictError(f"no user {user_id!r}")
    conn.execute(insert(conn, user_factors).values(user_id=user_id, token_generation=0)
                 .on_conflict_do_nothing(index_elements=[user_factors.c.user_id]))


def set_totp(conn: Connection, user_id: str, secret: str | None,
             recovery_hashes: Sequence[str]) -> None:
    _ensure_row(conn, user_id)
    conn.execute(sa.update(user_factors).where(user_factors.c.user_id == user_id)
                 .values(totp_secret=secret, totp_last_step=None))
    conn.execute(sa.delete(recovery_codes).where(recovery_codes.c.user_id == user_id))
    if recovery_hashes:
        conn.execute(sa.insert(recovery_codes),
                     [{"user_id": user_id, "code_hash": h} for h in dict.fromkeys(recovery_hashes)])


def use_totp_step(conn: Connection, user_id: str, step: int) -> bool:
    """One conditional UPDATE: of two logins with one code, only one changes the row."""
    changed = conn.execute(sa.update(user_factors).where(
        user_factors.c.user_id == user_id, user_factors.c.totp_secret.is_not(None),
        sa.or_(user_factors.c.totp_last_step.is_(None), user_factors.c.totp_last_step < step),
    ).values(totp_last_step=step))
    return changed.rowcount == 1


def consume_recovery_code(conn: Connection, user_id: str, code_hash: str) -> bool:
    deleted = conn.execute(sa.delete(recovery_codes).where(
        recovery_codes.c.user_id == user_id, recovery_codes.c.code_hash == code_hash))
    return deleted.rowcount == 1


def bump_token_generation(conn: Connection, user_id: str) -> int:
    _ensure_row(conn, user_id)
    conn.execute(sa.update(user_factors).where(user_factors.c.user_id == user_id)
                 .values(token_generation=user_factors.c.token_generation + 1))
    generation: int = conn.execute(sa.select(user_factors.c.token_generation)
                                   .where(user_factors.c.user_id == user_id)).scalar_one()
    return generation


def _login(row: sa.Row[Any]) -> LoginSession:
    return LoginSession(id=row.id, user_id=row.user_id, created_at=row.created_at,
                        expires_at=row.expires_at, client_ip=row.client_ip,
                        user_agent=row.user_agent,
                        methods=tuple(m for m in row.methods.split(",") if m))


def add_login_session(conn: Connection, session: LoginSession) -> None:
    conn.execute(sa.delete(login_sessions).where(
        login_sessions.c.user_id == session.user_id,
        login_sessions.c.expires_at < session.created_at))
    conn.execute(sa.insert(login_sessions).values(
        id=session.id, user_id=session.user_id, created_at=session.created_at,
        expires_at=session.expires_at, client_ip=session.client_ip,
        user_agent=session.user_agent, methods=",".join(session.methods)))


def get_login_session(conn: Connection, session_id: str) -> LoginSession | None:
    row = conn.execute(sa.select(login_sessions)
                       .where(login_sessions.c.id == session_id)).first()
    return None if row is None else _login(row)


def list_login_sessions(conn: Connection, user_id: str) -> list[LoginSession]:
    rows = conn.execute(sa.select(login_sessions).where(login_sessions.c.user_id == user_id)
                        .order_by(login_sessions.c.created_at.desc(),
                                  login_sessions.c.id.desc()))
    return [_login(row) for row in rows]


def end_login_sessions(conn: Connection, user_id: str, session_id: str | None) -> int:
    query = sa.delete(login_sessions).where(login_sessions.c.user_id == user_id)
    if session_id is not None:
        query = query.where(login_sessions.c.id == session_id)
    ended: int = conn.execute(query).rowcount
    return ended


# -- passkeys (WebAuthn) -------------------------------------------------------------------


def add_webauthn_challenge(conn: Connection, challenge: WebAuthnChallenge) -> None:
    conn.execute(sa.delete(webauthn_challenges).where(
        webauthn_challenges.c.user_id == challenge.user_id,
        webauthn_challenges.c.expires_at <= utcnow()))
    conn.execute(sa.insert(webauthn_challenges).values(
        challenge=challenge.challenge, user_id=challenge.user_id, purpose=challenge.purpose,
        expires_at=challenge.expires_at))


def take_webauthn_challenge(conn: Connection, challenge: str, user_id: str,
                            purpose: str) -> bool:
    """One conditional DELETE: of two logins answering one challenge, only one removes it."""
    taken = conn.execute(sa.delete(webauthn_challenges).where(
        webauthn_challenges.c.challenge == challenge,
        webauthn_challenges.c.user_id == user_id,
        webauthn_challenges.c.purpose == purpose,
        webauthn_challenges.c.expires_at > utcnow()))
    return taken.rowcount == 1


def _passkey(row: sa.Row[Any]) -> Passkey:
    return Passkey(id=row.id, user_id=row.user_id, credential_id=row.credential_id,
                   public_key=bytes(row.public_key), sign_count=row.sign_count, name=row.name,
                   created_at=row.created_at,
                   transports=tuple(t for t in row.transports.split(",") if t),
                   last_used_at=row.last_used_at)


def add_passkey(conn: Connection, passkey: Passkey) -> None:
    conn.execute(sa.insert(passkeys).values(
        id=passkey.id, user_id=passkey.user_id, credential_id=passkey.credential_id,
        public_key=passkey.public_key, sign_count=passkey.sign_count, name=passkey.name,
        transports=",".join(passkey.transports), created_at=passkey.created_at,
        last_used_at=passkey.last_used_at))


def list_passkeys(conn: Connection, user_id: str) -> list[Passkey]:
    rows = conn.execute(sa.select(passkeys).where(passkeys.c.user_id == user_id)
                        .order_by(passkeys.c.created_at, passkeys.c.id))
    return [_passkey(row) for row in rows]


def delete_passkeys(conn: Connection, user_id: str, passkey_id: str | None) -> int:
    query = sa.delete(passkeys).where(passkeys.c.user_id == user_id)
    if passkey_id is not None:
        query = query.where(passkeys.c.id == passkey_id)
    deleted: int = conn.execute(query).rowcount
    return deleted


def use_passkey(conn: Connection, passkey_id: str, seen_count: int, new_count: int) -> bool:
    """One conditional UPDATE on the counter seen: of two logins with one credential at
    the same moment, only one moves it."""
    changed = conn.execute(sa.update(passkeys).where(
        passkeys.c.id == passkey_id, passkeys.c.sign_count == seen_count,
    ).values(sign_count=new_count, last_used_at=utcnow()))
    return changed.rowcount == 1

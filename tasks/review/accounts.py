"""Accounts and login sessions: secrets are shown once and stored only as hashes.

Secrets are 256-bit random tokens, so a single sha256 is enough to store them safely (there
is nothing to brute-force, unlike a password); it also makes login a single indexed lookup.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from typing import Literal

from sqlalchemy import delete, insert, select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from storage.review_db import LoginSession, LoopReads, User, sql_statement
from tasks.review.rules import Account

Role = Literal["annotator", "admin"]
ROLES: tuple[str, ...] = ("annotator", "admin")
SESSION_SECONDS = 12 * 3600
SECRET_PREFIX = "rbk_"


class AccountError(ValueError):
    pass


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def add_user(engine: Engine, name: str, role: str, with_secret: bool = True) -> str | None:
    """Create an account; returns its secret (print it once: it cannot be recovered)."""
    name = name.strip()
    if not name or len(name) > 200 or any(c in name for c in "\r\n\t"):
        raise AccountError(f"user name must be 1-200 printable characters, got {name!r}")
    if role not in ROLES:
        raise AccountError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    secret = SECRET_PREFIX + secrets.token_urlsafe(32) if with_secret else None
    try:
        with engine.begin() as conn:
            conn.execute(
                insert(User).values(
                    name=name, role=role, secret_hash=hash_secret(secret) if secret else None, created_at=time.time()
                )
            )
    except IntegrityError:
        raise AccountError(f"a user named {name!r} already exists") from None
    return secret


def ensure_user(engine: Engine, name: str, role: str = "annotator") -> Account:
    """The account with this name, created without a login secret when missing (imports)."""
    with engine.connect() as conn:
        row = conn.execute(select(User.id, User.name, User.role).where(User.name == name)).first()
    if row is None:
        try:
            add_user(engine, name, role, with_secret=False)
        except AccountError:
            pass  # created concurrently
        with engine.connect() as conn:
            row = conn.execute(select(User.id, User.name, User.role).where(User.name == name)).first()
    return Account(row.id, row.name, row.role)


def get_user(engine: Engine, name: str) -> Account | None:
    with engine.connect() as conn:
        row = conn.execute(select(User.id, User.name, User.role).where(User.name == name)).first()
    return Account(row.id, row.name, row.role) if row else None


def authenticate(engine: Engine, secret: str) -> Account | None:
    with engine.connect() as conn:
        return authenticate_in(conn, secret)


def authenticate_in(conn: Connection, secret: str) -> Account | None:
    """The account whose secret this is, or None (one indexed lookup of the secret's hash)."""
    if not secret or len(secret) > 200:
        return None
    row = conn.execute(
        select(User.id, User.name, User.role).where(User.secret_hash == hash_secret(secret.strip()))
    ).first()
    return Account(row.id, row.name, row.role) if row else None


def open_session(engine: Engine, user: Account) -> tuple[str, str]:
    """A new login session; returns (cookie token, CSRF token). Only the token's hash is stored."""
    with engine.begin() as conn:
        return session_in(conn, user, time.time())


def session_in(conn: Connection, user: Account, now: float) -> tuple[str, str]:
    """:func:`open_session` inside the caller's transaction (a login decided in one transaction)."""
    token = secrets.token_urlsafe(32)
    csrf = secrets.token_urlsafe(32)
    conn.execute(delete(LoginSession).where(LoginSession.expires_at < now))
    conn.execute(
        insert(LoginSession).values(
            token_hash=hash_secret(token), user_id=user.id, csrf=csrf, created_at=now, expires_at=now + SESSION_SECONDS
        )
    )
    return token, csrf


SESSION_SQL = (
    "SELECT u.id, u.name, u.role, s.csrf, s.expires_at FROM review_sessions s "
    "JOIN review_users u ON u.id = s.user_id WHERE s.token_hash = :token_hash"
)


def session_user(engine: Engine, token: str | None) -> tuple[Account, str] | None:
    """(account, CSRF token) of a live session, or None: one indexed statement in plain SQL,
    outside any transaction (:func:`sql_statement`)."""
    if not token or len(token) > 200:
        return None
    with sql_statement(engine) as sql:
        return _live(sql.row(SESSION_SQL, {"token_hash": hash_secret(token)}))


async def session_user_on_loop(reads: LoopReads, token: str | None) -> tuple[Account, str] | None:
    """:func:`session_user` on the event loop. The app reads the session on every request (no
    cache), so a logout through any process ends the session everywhere at the next request."""
    if not token or len(token) > 200:
        return None
    return _live(await reads.row(SESSION_SQL, {"token_hash": hash_secret(token)}))


def _live(row: tuple | None) -> tuple[Account, str] | None:
    if row is None or row[4] < time.time():
        return None
    return Account(row[0], row[1], row[2]), row[3]


def close_session(engine: Engine, token: str | None) -> None:
    if token:
        with engine.begin() as conn:
            conn.execute(delete(LoginSession).where(LoginSession.token_hash == hash_secret(token)))

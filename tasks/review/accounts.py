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
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from storage.review_db import LoginFailure, LoginSession, User
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
                insert(User).values(name=name, role=role, secret_hash=hash_secret(secret) if secret else None, created_at=time.time())
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
    if not secret or len(secret) > 200:
        return None
    with engine.connect() as conn:
        row = conn.execute(select(User.id, User.name, User.role).where(User.secret_hash == hash_secret(secret.strip()))).first()
    return Account(row.id, row.name, row.role) if row else None


def open_session(engine: Engine, user: Account) -> tuple[str, str]:
    """A new login session; returns (cookie token, CSRF token). Only the token's hash is stored."""
    token = secrets.token_urlsafe(32)
    csrf = secrets.token_urlsafe(32)
    now = time.time()
    with engine.begin() as conn:
        conn.execute(delete(LoginSession).where(LoginSession.expires_at < now))
        conn.execute(
            insert(LoginSession).values(token_hash=hash_secret(token), user_id=user.id, csrf=csrf, created_at=now, expires_at=now + SESSION_SECONDS)
        )
    return token, csrf


def session_user(engine: Engine, token: str | None) -> tuple[Account, str] | None:
    """(account, CSRF token) of a live session, or None."""
    if not token or len(token) > 200:
        return None
    with engine.connect() as conn:
        row = conn.execute(
            select(User.id, User.name, User.role, LoginSession.csrf, LoginSession.expires_at)
            .join(LoginSession, LoginSession.user_id == User.id)
            .where(LoginSession.token_hash == hash_secret(token))
        ).first()
    if row is None or row.expires_at < time.time():
        return None
    return Account(row.id, row.name, row.role), row.csrf


def close_session(engine: Engine, token: str | None) -> None:
    if token:
        with engine.begin() as conn:
            conn.execute(delete(LoginSession).where(LoginSession.token_hash == hash_secret(token)))


# Refused logins allowed per window before a key is told to wait: per client address, and
# over all clients together (a secret names no account before it matches, so a per-account
# count cannot exist; the global cap bounds guessing spread over many addresses).
LOGIN_WINDOW_S = 600.0
LOGIN_LIMITS = {"client": 10, "all": 200}


def login_keys(client: str) -> dict[str, str]:
    return {"client": f"client:{client[:150]}", "all": "all"}


def login_retry_after(engine: Engine, client: str, now: float | None = None) -> float | None:
    """Seconds until ``client`` may try again, or None when a login attempt is allowed. The
    counters live in the database, so every server process on it enforces the same limit."""
    now = time.time() if now is None else now
    keys = login_keys(client)
    with engine.connect() as conn:
        for scope, key in keys.items():
            rows = conn.execute(
                select(LoginFailure.at).where(LoginFailure.key == key, LoginFailure.at > now - LOGIN_WINDOW_S).order_by(LoginFailure.at.desc()).limit(LOGIN_LIMITS[scope])
            ).scalars().all()
            if len(rows) >= LOGIN_LIMITS[scope]:
                return max(1.0, rows[-1] + LOGIN_WINDOW_S - now)
    return None


def record_login_failure(engine: Engine, client: str, now: float | None = None) -> None:
    now = time.time() if now is None else now
    with engine.begin() as conn:
        conn.execute(delete(LoginFailure).where(LoginFailure.at <= now - LOGIN_WINDOW_S))
        conn.execute(insert(LoginFailure), [{"key": key, "at": now} for key in login_keys(client).values()])


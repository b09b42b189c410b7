"""Deciding a login attempt: limits on refused logins that hold under concurrency, and that
an attacker cannot turn into a lock-out of everyone.

One attempt is one database transaction that checks the limits, looks the secret up and
either records the refusal or opens the session. Attempts of one client take turns: on
SQLite the transaction is a write transaction (``BEGIN IMMEDIATE``, one writer at a time
across processes); on PostgreSQL it first takes a transaction-scoped advisory lock on the
client's key. So 30 wrong secrets sent at once from one client are counted one after the
other and only the first ``LOGIN_LIMITS["client"]`` are evaluated, whichever server
process each reaches.

Who is "the client": a browser that logged in successfully before carries a device cookie
(a random token, only its hash is stored) and is counted on its own; any other request is
counted by its address (the peer address, or the proxy's ``X-Forwarded-For`` only when the
server was told to trust that proxy). Over all clients without a known device, at most
``LOGIN_LIMITS["all"]`` refusals per window: past that, new browsers wait, while browsers
that logged in within ``DEVICE_SECONDS`` are never held back by the global cap. An attacker
can slow down first logins, never lock out the people already working.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass

from sqlalchemy import delete, insert, select, text, update
from sqlalchemy.engine import Connection, Engine

from storage.review_db import LoginDevice, LoginFailure, is_sqlite, retry_lost_connection, write_lock
from tasks.review.accounts import authenticate_in, hash_secret, session_in
from tasks.review.rules import Account

LOGIN_WINDOW_S = 600.0
LOGIN_LIMITS = {"client": 10, "all": 200}  # refused logins per window: per client, and over unknown clients
DEVICE_SECONDS = 30 * 24 * 3600.0  # a browser stays "known" this long after its last successful login
GLOBAL_KEY = "all"


@dataclass
class LoginResult:
    """What one attempt decided: a session (``user``, ``token``, ``device``), a refusal
    (all None), or a wait (``retry_after`` seconds; the secret was not even looked up)."""

    user: Account | None = None
    token: str | None = None
    device: str | None = None
    retry_after: float | None = None


def attempt_login(
    engine: Engine, client: str, secret: str, device: str | None = None, now: float | None = None
) -> LoginResult:
    """Decide one login attempt from ``client`` (an address) carrying ``device`` (the device
    cookie, if any), in one transaction that the client's other attempts wait for (run again
    on a fresh connection when the database had closed the pooled one)."""
    now = time.time() if now is None else now
    return retry_lost_connection(lambda: _attempt(engine, client, secret, device, now))


def _attempt(engine: Engine, client: str, secret: str, device: str | None, now: float) -> LoginResult:
    with write_lock(engine), engine.begin() as conn:
        known = _known_device(conn, device, now)
        key = f"device:{hash_secret(device)}" if known else f"client:{client[:150]}"
        if not is_sqlite(engine):  # attempts of one client take turns (SQLite: BEGIN IMMEDIATE already does)
            conn.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": _lock_id(key)})
        wait = _retry_after(conn, key, "client", now)
        if wait is None and not known:
            wait = _retry_after(conn, GLOBAL_KEY, "all", now)
        if wait is not None:
            return LoginResult(retry_after=wait)
        user = authenticate_in(conn, secret)
        if user is None:
            conn.execute(delete(LoginFailure).where(LoginFailure.at <= now - LOGIN_WINDOW_S))
            conn.execute(insert(LoginFailure), [{"key": key, "at": now}, {"key": GLOBAL_KEY, "at": now}])
            return LoginResult()
        token, _csrf = session_in(conn, user, now)
        return LoginResult(user=user, token=token, device=_remember_device(conn, device if known else None, user, now))


def _known_device(conn: Connection, device: str | None, now: float) -> bool:
    if not device or len(device) > 200:
        return False
    at = conn.execute(
        select(LoginDevice.last_login_at).where(LoginDevice.token_hash == hash_secret(device))
    ).scalar_one_or_none()
    return at is not None and at > now - DEVICE_SECONDS


def _remember_device(conn: Connection, device: str | None, user: Account, now: float) -> str:
    """The device token to (re)send: the known one, refreshed, or a new one."""
    conn.execute(delete(LoginDevice).where(LoginDevice.last_login_at <= now - DEVICE_SECONDS))
    if device is not None:
        conn.execute(
            update(LoginDevice)
            .where(LoginDevice.token_hash == hash_secret(device))
            .values(last_login_at=now, user_id=user.id)
        )
        return device
    device = secrets.token_urlsafe(32)
    conn.execute(insert(LoginDevice).values(token_hash=hash_secret(device), user_id=user.id, last_login_at=now))
    return device


def _retry_after(conn: Connection, key: str, scope: str, now: float) -> float | None:
    """Seconds until ``key`` may try again (its oldest counted refusal leaves the window), or None."""
    limit = LOGIN_LIMITS[scope]
    recent = (
        conn.execute(
            select(LoginFailure.at)
            .where(LoginFailure.key == key, LoginFailure.at > now - LOGIN_WINDOW_S)
            .order_by(LoginFailure.at.desc())
            .limit(limit)
        )
        .scalars()
        .all()
    )
    return max(1.0, recent[-1] + LOGIN_WINDOW_S - now) if len(recent) >= limit else None


def _lock_id(key: str) -> int:
    """A signed 64-bit advisory-lock id for ``key``."""
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big", signed=True)

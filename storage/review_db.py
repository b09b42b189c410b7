"""The review queue's database: users, sessions, queue items, leases and append-only events.

Decisions, retractions, adjudications, inline question edits and the derived per-item
resolutions are rows of ``review_events`` that are only ever inserted; the current state of
an item is read from its latest events. ``review_item_state`` is a cache of that derived
state (the item's latest resolution and whether it can be leased), written in the same
transaction as each resolution event and rebuildable from the events at any time
(:func:`sync_item_state`); it lets the queue find open items through an index instead of
scanning every resolved item. Leases, login sessions, known login devices and refused-login
counters are operational state (who holds what right now) and are deleted when released or stale.

SQLite (WAL) in the run directory by default; PostgreSQL by URL for a team. On SQLite every
write transaction starts with ``BEGIN IMMEDIATE`` so writers queue up instead of failing on
upgrade, and writers of one process first take an in-process lock (:func:`write_lock`) so
they wait on that lock rather than in SQLite's sleeping busy handler; read-only connections
(``execution_options(review_read=True)``) use a plain deferred ``BEGIN`` and never wait for
writers (WAL). On PostgreSQL the queue locks item-state rows (``FOR UPDATE SKIP LOCKED``).
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, TypeVar

from sqlalchemy import (
    BigInteger,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    create_engine,
    event,
    text,
)
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from storage.fs import DiskFull, free_bytes

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Mapping

    import psycopg
    from sqlalchemy.engine.interfaces import DBAPIConnection, ExceptionContext
    from sqlalchemy.pool import ConnectionPoolEntry, PoolProxiedConnection

SCHEMA_VERSION = 2  # v2: review_item_state (derived cache of the latest resolution)
DEFAULT_DB_NAME = "queue.sqlite"

EventId = BigInteger().with_variant(Integer, "sqlite")  # SQLite autoincrement needs INTEGER PRIMARY KEY


class Base(DeclarativeBase):
    pass


class User(Base):
    """An account. ``secret_hash`` is the sha256 of a 256-bit random secret (null: no login,
    e.g. annotators imported from Label Studio)."""

    __tablename__ = "review_users"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    role: Mapped[str] = mapped_column(String(20))  # annotator | admin
    secret_hash: Mapped[str | None] = mapped_column(String(64), unique=True, nullable=True)
    created_at: Mapped[float] = mapped_column(Float)


class LoginSession(Base):
    __tablename__ = "review_sessions"
    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("review_users.id"))
    csrf: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[float] = mapped_column(Float)
    expires_at: Mapped[float] = mapped_column(Float)


class LoginFailure(Base):
    """A refused login attempt, counted per key (``client:<address>``, ``all``) for rate
    limiting across server processes; rows older than the window are deleted."""

    __tablename__ = "review_login_failures"
    id: Mapped[int] = mapped_column(EventId, primary_key=True, autoincrement=True)
    key: Mapped[str] = mapped_column(String(200))
    at: Mapped[float] = mapped_column(Float)
    __table_args__ = (Index("ix_review_login_failures_key_at", "key", "at"),)


class LoginDevice(Base):
    """A browser that logged in successfully: ``token_hash`` is the sha256 of the random token
    in its ``rb_device`` cookie. Such a browser is counted on its own for refused logins and
    is spared the global cap, so a flood of wrong secrets cannot lock out the team.
    Operational state: rows unused for the device lifetime are deleted."""

    __tablename__ = "review_login_devices"
    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("review_users.id"))
    last_login_at: Mapped[float] = mapped_column(Float)


class Item(Base):
    """One unit of review work: an edit to verify (stage ``edit``) or its questions (stage ``qa``,
    open once the edit item resolved as accepted). Inserted once, never changed."""

    __tablename__ = "review_items"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    stage: Mapped[str] = mapped_column(String(10))  # edit | qa
    edit_id: Mapped[str] = mapped_column(String(64), index=True)
    parent_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    task: Mapped[str] = mapped_column(String(64))
    variant: Mapped[str] = mapped_column(String(32))
    editor: Mapped[str] = mapped_column(String(200))
    seq: Mapped[int] = mapped_column(Integer)
    payload_json: Mapped[str] = mapped_column(Text)
    created_at: Mapped[float] = mapped_column(Float)
    __table_args__ = (Index("ix_review_items_stage_seq", "stage", "seq"),)


class Event(Base):
    """Append-only log. ``kind``: decision | retract | adjudication | resolution |
    question_edit | question_validity. ``n`` is the number of current decisions (resolution rows)."""

    __tablename__ = "review_events"
    id: Mapped[int] = mapped_column(EventId, primary_key=True, autoincrement=True)
    item_id: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(20))
    annotator_id: Mapped[int] = mapped_column(ForeignKey("review_users.id"))
    created_at: Mapped[float] = mapped_column(Float)
    verdict: Mapped[str | None] = mapped_column(String(20), nullable=True)  # accept | reject | disputed | pending
    n: Mapped[int | None] = mapped_column(Integer, nullable=True)
    reasons_json: Mapped[str | None] = mapped_column(Text, nullable=True)
    note: Mapped[str | None] = mapped_column(Text, nullable=True)
    question_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    before_json: Mapped[str | None] = mapped_column(Text, nullable=True)
    after_json: Mapped[str | None] = mapped_column(Text, nullable=True)
    source_ref: Mapped[str | None] = mapped_column(
        String(200), unique=True, nullable=True
    )  # e.g. labelstudio:<task>:<annotation>
    __table_args__ = (
        Index("ix_review_events_item_kind", "item_id", "kind", "id"),
        Index("ix_review_events_annotator", "annotator_id", "kind", "id"),
        # "this annotator's latest decision on this item" (leasing, item pages, decide) without
        # walking all of the annotator's decisions
        Index("ix_review_events_item_annotator", "item_id", "annotator_id", "kind", "id"),
    )


class Lease(Base):
    """An item slot held by one annotator until ``expires_at``. The primary key (item, slot)
    makes a double lease of one slot impossible at the database level."""

    __tablename__ = "review_leases"
    item_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    slot: Mapped[int] = mapped_column(Integer, primary_key=True)
    annotator_id: Mapped[int] = mapped_column(ForeignKey("review_users.id"))
    stage: Mapped[str] = mapped_column(String(10))
    leased_at: Mapped[float] = mapped_column(Float)
    expires_at: Mapped[float] = mapped_column(Float)
    __table_args__ = (
        UniqueConstraint("item_id", "annotator_id", name="uq_review_leases_item_annotator"),
        Index("ix_review_leases_annotator", "annotator_id", "stage"),
    )


class ItemState(Base):
    """Derived, rebuildable cache of each item's state: the latest ``resolution`` event
    (``outcome``, ``n``, ``resolution_id``) and ``available`` = 1 when the item can take new
    leases (outcome pending and, for QA items, the parent edit accepted). Written only in the
    transaction that appends the resolution event it mirrors (or by :func:`sync_item_state`)."""

    __tablename__ = "review_item_state"
    item_id: Mapped[str] = mapped_column(ForeignKey("review_items.id"), primary_key=True)
    stage: Mapped[str] = mapped_column(String(10))
    seq: Mapped[int] = mapped_column(Integer)
    parent_id: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    outcome: Mapped[str] = mapped_column(String(20))  # pending | accept | reject | disputed
    n: Mapped[int] = mapped_column(Integer)
    resolution_id: Mapped[int | None] = mapped_column(EventId, nullable=True)
    available: Mapped[int] = mapped_column(Integer)  # 0 | 1 (portable across SQLite and PostgreSQL)
    __table_args__ = (Index("ix_review_item_state_open", "stage", "available", "seq"),)


class Meta(Base):
    __tablename__ = "review_meta"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


def normalize_url(url: str) -> str:
    """Accept ``postgresql://`` and ``postgres://`` URLs and use the psycopg 3 driver."""
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://") :]
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://") :]
    return url


def sqlite_url(path: str) -> str:
    return f"sqlite:///{path}"


def redact(url: str) -> str:
    """The URL with any password hidden, for logs and manifests."""
    return make_url(url).render_as_string(hide_password=True)


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"


_WRITE_LOCKS: weakref.WeakKeyDictionary[Engine, threading.Lock] = weakref.WeakKeyDictionary()


def write_lock(engine: Engine) -> AbstractContextManager[object]:
    """The in-process writer lock of a SQLite engine (a no-op context on PostgreSQL).

    SQLite allows one writer at a time; a second ``BEGIN IMMEDIATE`` waits in SQLite's busy
    handler, which polls with sleeps of up to 100 ms and makes tail latency jump under load.
    Threads of one server take this lock first and are woken as soon as the writer before
    them commits. Other processes are still serialised by SQLite itself (busy_timeout)."""
    if not is_sqlite(engine):
        return nullcontext()
    lock = _WRITE_LOCKS.get(engine)
    if lock is None:
        lock = _WRITE_LOCKS.setdefault(engine, threading.Lock())
    return lock


def make_engine(url: str, pool_size: int = 10) -> Engine:
    """An engine configured for the queue: WAL + immediate write transactions on SQLite. Up to
    ``pool_size`` connections stay open, twice as many more are opened under load."""
    url = normalize_url(url)
    if url.startswith("sqlite"):
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": 30},
            pool_size=pool_size,
            max_overflow=2 * pool_size,
        )
        _WRITE_LOCKS[engine] = threading.Lock()

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        @event.listens_for(engine, "handle_error")
        def _on_full_disk(ctx: ExceptionContext) -> None:
            full = disk_full(engine, ctx.original_exception)
            if full is not None:
                raise full from ctx.original_exception

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Connection) -> None:
            # read-only connections take a snapshot without the write lock (WAL readers never block)
            conn.exec_driver_sql("BEGIN" if conn.get_execution_options().get("review_read") else "BEGIN IMMEDIATE")

        return engine
    if url.startswith("postgresql"):
        # No pre-ping (a ``SELECT 1`` round trip on every checkout): a connection the server
        # closed (a restart) fails its first statement instead, and :func:`sql_transaction` /
        # the queue's retry drop it and run the transaction again on a fresh one.
        engine = create_engine(url, pool_size=pool_size, max_overflow=2 * pool_size)

        @event.listens_for(engine, "handle_error")
        def _on_full_server_disk(ctx: ExceptionContext) -> None:
            full = disk_full(engine, ctx.original_exception)
            if full is not None:
                raise full from ctx.original_exception

        return engine
    raise ValueError(f"review database URL must be sqlite:///... or postgresql://..., got {redact(url)!r}")


def create_schema(engine: Engine) -> None:
    """Create the tables when missing and record the schema version; refuse a newer schema.
    A v1 database (no item-state cache) is upgraded by deriving the cache from its events."""
    Base.metadata.create_all(engine)
    with write_lock(engine), engine.begin() as conn:
        for index in Event.__table__.indexes:  # indexes added after v1 (create_all skips existing tables)
            index.create(conn, checkfirst=True)
        row = conn.execute(Meta.__table__.select().where(Meta.key == "schema_version")).first()
        if row is not None and int(row.value) > SCHEMA_VERSION:
            raise RuntimeError(
                f"review database {redact(str(engine.url))} has schema v{row.value}; this code reads up to v{SCHEMA_VERSION}"
            )
        if row is None:
            conn.execute(Meta.__table__.insert().values(key="schema_version", value=str(SCHEMA_VERSION)))
        elif int(row.value) < SCHEMA_VERSION:
            conn.execute(Meta.__table__.update().where(Meta.key == "schema_version").values(value=str(SCHEMA_VERSION)))
        if (
            row is None
            or int(row.value) < SCHEMA_VERSION
            or conn.execute(text(_MISSING_STATE_SQL)).first() is not None
        ):
            sync_item_state(conn)


_MISSING_STATE_SQL = "SELECT i.id FROM review_items i WHERE NOT EXISTS (SELECT 1 FROM review_item_state s WHERE s.item_id = i.id) LIMIT 1"

# Same rule as the queue's ``_resolve``/``_set_state``: available = pending and (no parent or parent accepted).
AVAILABLE_SQL = (
    "CASE WHEN review_item_state.outcome = 'pending' AND (review_item_state.parent_id IS NULL OR EXISTS "
    "(SELECT 1 FROM review_item_state p WHERE p.item_id = review_item_state.parent_id AND p.outcome = 'accept')) THEN 1 ELSE 0 END"
)


def sync_item_state(conn: Connection) -> None:
    """(Re)derive every row of ``review_item_state`` from items and their latest resolution
    events. Used to upgrade v1 databases; safe to run at any time (inside a write transaction)."""
    conn.execute(
        text(
            "INSERT INTO review_item_state (item_id, stage, seq, parent_id, outcome, n, resolution_id, available) "
            "SELECT i.id, i.stage, i.seq, i.parent_id, 'pending', 0, NULL, 0 FROM review_items i "
            "WHERE NOT EXISTS (SELECT 1 FROM review_item_state s WHERE s.item_id = i.id)"
        )
    )
    conn.execute(
        text(
            "UPDATE review_item_state SET resolution_id = (SELECT max(e.id) FROM review_events e "
            "WHERE e.item_id = review_item_state.item_id AND e.kind = 'resolution')"
        )
    )
    conn.execute(
        text(
            "UPDATE review_item_state SET "
            "outcome = COALESCE((SELECT e.verdict FROM review_events e WHERE e.id = review_item_state.resolution_id), 'pending'), "
            "n = COALESCE((SELECT e.n FROM review_events e WHERE e.id = review_item_state.resolution_id), 0)"
        )
    )
    conn.execute(text(f"UPDATE review_item_state SET available = {AVAILABLE_SQL}"))


# -- plain SQL on the hot path -----------------------------------------------------------------

_PARAM = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")
_PG_SQL: dict[str, str] = {}


def pg_text(sql: str) -> str:
    """A statement with ``:name`` parameters in psycopg's ``%(name)s`` style (cached)."""
    out = _PG_SQL.get(sql)
    if out is None:
        out = _PG_SQL[sql] = _PARAM.sub(r"%(\1)s", sql.replace("%", "%%"))
    return out


class Sql:
    """Plain SQL on one DBAPI connection (sqlite3 or psycopg), without SQLAlchemy's statement
    layers. The review app's busiest requests (session lookup, next item, decide) are a few
    small indexed statements each, and compiling, caching and wrapping them in SQLAlchemy cost
    more CPU than running them. Statements are written once with ``:name`` parameters (turned
    into psycopg's ``%(name)s`` on PostgreSQL, once per statement text); rows are tuples."""

    __slots__ = ("_cur", "dbapi", "postgres")

    def __init__(self, dbapi_conn: DBAPIConnection, postgres: bool):
        self.dbapi = dbapi_conn
        self.postgres = postgres
        self._cur = dbapi_conn.cursor()

    @classmethod
    def over(cls, conn: Connection) -> Sql:
        """Plain SQL inside the transaction of a SQLAlchemy connection (same DBAPI connection)."""
        return cls(conn.connection.driver_connection, conn.dialect.name != "sqlite")

    def _text(self, sql: str) -> str:
        return pg_text(sql) if self.postgres else sql

    def rows(self, sql: str, params: Mapping[str, object] | None = None) -> list[tuple]:
        """All rows of a statement that returns rows (a read, or a write ``... RETURNING``)."""
        cur = self._cur
        cur.execute(self._text(sql), params or {})
        return cur.fetchall()

    def row(self, sql: str, params: Mapping[str, object] | None = None) -> tuple | None:
        """The first row of a read, or None."""
        rows = self.rows(sql, params)
        return rows[0] if rows else None

    def scalars(self, sql: str, params: Mapping[str, object] | None = None) -> list[object]:
        return [r[0] for r in self.rows(sql, params)]

    def run(self, sql: str, params: Mapping[str, object] | None = None) -> None:
        """Execute a write that returns nothing (``RETURNING`` with :meth:`rows` says what it changed)."""
        self._cur.execute(self._text(sql), params or {})


PG_DISK_FULL = "53100"  # PostgreSQL's SQLSTATE disk_full ("could not extend file ...: No space left on device")
# What the server says when the disk is full without that SQLSTATE: an ENOSPC in its words, or
# (a first connection to a database on a full disk) the relation cache file it could not write.
PG_FULL_WORDS = ("No space left on device", "could not write init file")


def disk_full(engine: Engine, exc: BaseException) -> DiskFull | None:
    """A full disk under the queue as the ``DiskFull`` every other write raises on ENOSPC, so the
    CLI prints its one line with the resume command (and the review app answers 507) instead of a
    traceback. SQLite's "database or disk is full" (``SQLITE_FULL``) names the database file and
    the space left; PostgreSQL's ``disk_full`` (SQLSTATE 53100, or ``PG_FULL_WORDS``; the server's
    disk, whose free space is not ours to read) names the database URL (password hidden) and the
    server's words. None
    for any other error."""
    orig = getattr(exc, "orig", None) or exc
    if not is_sqlite(engine):
        if getattr(orig, "sqlstate", None) != PG_DISK_FULL and not any(w in str(orig) for w in PG_FULL_WORDS):
            return None
        said = str(orig).strip().splitlines()[0] if str(orig).strip() else "disk full"
        return DiskFull(f"the PostgreSQL database {redact(str(engine.url))} (the server said: {said})", None, None)
    code = getattr(orig, "sqlite_errorcode", None)
    if code is None or code & 0xFF != sqlite3.SQLITE_FULL:
        return None
    path = engine.url.database or ""
    return DiskFull(path, None, free_bytes(os.path.dirname(os.path.abspath(path))) if path else None)


def dbapi_errors(engine: Engine) -> type[Exception]:
    """The DBAPI's base exception (``sqlite3.Error`` / ``psycopg.Error``): what plain SQL raises."""
    return engine.dialect.loaded_dbapi.Error


@contextmanager
def sql_transaction(engine: Engine, write: bool = True) -> Iterator[Sql]:
    """One transaction of plain SQL on a pooled connection, committed at the end (rolled back
    on an error). SQLite: ``BEGIN IMMEDIATE`` behind the in-process writer lock for writes, a
    deferred ``BEGIN`` (a WAL snapshot that neither waits for nor blocks writers) for reads.
    PostgreSQL: psycopg's own ``BEGIN`` before the first statement. A connection found broken
    (the server restarted) is dropped with the rest of the pool; the error says whether the
    transaction may be run again (``review_retry``: it failed before its ``COMMIT`` was sent).
    (psycopg's pipeline mode, which sends ``BEGIN`` with the first statement, cost more client
    CPU per decision than the round trip it saves: measured, not used.)"""
    sqlite = is_sqlite(engine)
    with write_lock(engine) if (sqlite and write) else nullcontext():
        fairy = engine.raw_connection()
        committing = False
        try:
            dbapi = fairy.driver_connection
            tx = Sql(dbapi, not sqlite)
            if sqlite:
                tx._cur.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield tx
                committing = True
                dbapi.commit()
            except BaseException:
                if not committing:
                    _quiet_rollback(dbapi)
                raise
        except dbapi_errors(engine) as exc:
            _on_error(engine, fairy, exc, retry_ok=not committing)
            full = disk_full(engine, exc)
            if full is not None:
                raise full from exc
            raise
        finally:
            fairy.close()


@contextmanager
def sql_statement(engine: Engine) -> Iterator[Sql]:
    """Plain SQL outside a transaction: for a read that is one statement (its own snapshot),
    without ``BEGIN`` / ``COMMIT`` round trips on PostgreSQL; never waits for a writer."""
    fairy = engine.raw_connection()
    try:
        dbapi = fairy.driver_connection
        postgres = not is_sqlite(engine)
        if postgres:
            dbapi.autocommit = True
        try:
            yield Sql(dbapi, postgres)
        finally:
            if postgres and not dbapi.closed:
                dbapi.autocommit = False
    except dbapi_errors(engine) as exc:
        _on_error(engine, fairy, exc, retry_ok=True)
        full = disk_full(engine, exc)
        if full is not None:
            raise full from exc
        raise
    finally:
        fairy.close()


T = TypeVar("T")


def retry_lost_connection(fn: Callable[[], T]) -> T:
    """``fn()``, run once more when it failed on a pooled connection the database had closed (a
    restart, an idle timeout): SQLAlchemy then drops the whole pool, so the second call gets a
    fresh connection. For work that is safe to repeat (reads; a login, whose worst repeat is
    one refusal counted twice or an unused session), on SQLAlchemy connections; the queue's
    plain-SQL transactions have their own retry (``ReviewQueue._run``)."""
    try:
        return fn()
    except DBAPIError as exc:
        if not exc.connection_invalidated:
            raise
    return fn()


def _quiet_rollback(dbapi: DBAPIConnection) -> None:
    try:
        dbapi.rollback()
    except Exception:  # a broken connection: the error being raised says more
        pass


def _on_error(engine: Engine, fairy: PoolProxiedConnection, exc: Exception, retry_ok: bool) -> None:
    """A lost connection: drop it and every other pooled one (they were opened before the
    server went away), and mark the error retryable when nothing may have been committed."""
    if engine.dialect.is_disconnect(exc, fairy.driver_connection, None):
        fairy.invalidate(exc)
        engine.pool.dispose()
        try:
            exc.review_retry = retry_ok  # type: ignore[attr-defined]
        except AttributeError:
            pass


class LoopReads:
    """One-statement reads on the event loop, without a worker thread (a thread hop costs the
    server more CPU than the read): on PostgreSQL over a few async psycopg connections in
    autocommit (per event loop, opened on demand, a broken one dropped and the read tried once
    more on a fresh one); on SQLite inline, on a pooled connection outside any transaction (a
    WAL read of an index takes microseconds and never waits for a writer)."""

    def __init__(self, engine: Engine, size: int = 4):
        self.engine = engine
        self.size = size
        self._postgres = not is_sqlite(engine)
        self._pools: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[asyncio.Semaphore, list[psycopg.AsyncConnection]]
        ] = weakref.WeakKeyDictionary()

    async def row(self, sql: str, params: Mapping[str, object]) -> tuple | None:
        if not self._postgres:
            with sql_statement(self.engine) as s:
                return s.row(sql, params)
        import asyncio

        import psycopg

        loop = asyncio.get_running_loop()
        pool = self._pools.get(loop)
        if pool is None:
            pool = self._pools[loop] = (asyncio.Semaphore(self.size), [])
        slots, idle = pool
        text = pg_text(sql)
        async with slots:
            for attempt in (0, 1):
                conn = idle.pop() if idle else await self._connect()
                done = False
                try:
                    cur = await conn.execute(text, params)
                    row = await cur.fetchone()
                    done = True
                except psycopg.Error:
                    if attempt or not conn.broken:
                        raise
                    continue  # a connection the server closed (restart): once more on a new one
                finally:
                    if done:
                        idle.append(conn)
                    else:  # failed or cancelled mid-statement: never reused
                        asyncio.ensure_future(conn.close())
                return row
        raise AssertionError("unreachable")

    async def _connect(self) -> psycopg.AsyncConnection:
        import psycopg

        cargs, cparams = self.engine.dialect.create_connect_args(self.engine.url)
        cparams.pop("context", None)  # SQLAlchemy's adapters for its own (sync) connections
        return await psycopg.AsyncConnection.connect(*cargs, **cparams, autocommit=True)

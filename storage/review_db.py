"""The review queue's database: users, sessions, queue items, leases and append-only events.

Decisions, retractions, adjudications, inline question edits and the derived per-item
resolutions are rows of ``review_events`` that are only ever inserted; the current state of
an item is read from its latest events. Leases and login sessions are operational state
(who holds what right now) and are deleted when released.

SQLite (WAL) in the run directory by default; PostgreSQL by URL for a team. On SQLite every
transaction starts with ``BEGIN IMMEDIATE`` so writers queue up instead of failing on
upgrade; on PostgreSQL the queue locks item rows (``FOR UPDATE SKIP LOCKED``).
"""

from __future__ import annotations

from typing import Any

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
)
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

SCHEMA_VERSION = 1
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
    source_ref: Mapped[str | None] = mapped_column(String(200), unique=True, nullable=True)  # e.g. labelstudio:<task>:<annotation>
    __table_args__ = (
        Index("ix_review_events_item_kind", "item_id", "kind", "id"),
        Index("ix_review_events_annotator", "annotator_id", "kind", "id"),
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


def make_engine(url: str, pool_size: int = 10) -> Engine:
    """An engine configured for the queue: WAL + immediate transactions on SQLite."""
    url = normalize_url(url)
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30}, pool_size=pool_size, max_overflow=20)

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Any) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    if url.startswith("postgresql"):
        return create_engine(url, pool_size=pool_size, max_overflow=20, pool_pre_ping=True)
    raise ValueError(f"review database URL must be sqlite:///... or postgresql://..., got {redact(url)!r}")


def create_schema(engine: Engine) -> None:
    """Create the tables when missing and record the schema version; refuse a newer schema."""
    Base.metadata.create_all(engine)
    with engine.begin() as conn:
        row = conn.execute(Meta.__table__.select().where(Meta.key == "schema_version")).first()
        if row is None:
            conn.execute(Meta.__table__.insert().values(key="schema_version", value=str(SCHEMA_VERSION)))
        elif int(row.value) > SCHEMA_VERSION:
            raise RuntimeError(
                f"review database {redact(str(engine.url))} has schema v{row.value}; this code reads up to v{SCHEMA_VERSION}"
            )

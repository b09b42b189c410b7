"""The review queue: leases with timeout, k-fold annotation, append-only decisions.

Every state change is an inserted event; the state of an item is derived from its events
with the rules of :mod:`tasks.review.rules` (an annotator's current decision is their latest
``decision`` unless retracted; each change appends a ``resolution`` event with the outcome
and the number of current decisions). The latest resolution of each item is mirrored in
``review_item_state`` in the same transaction (a derived cache, rebuildable from the events
with ``storage.review_db.sync_item_state``), which the leasing query reads through an index.
Leases are the only rows that are deleted: they say who holds an item right now, not what
was decided.

``ReviewQueue`` is assembled from one module per job: :mod:`~tasks.review.leasing` (next
items, leases), :mod:`~tasks.review.decisions` (decide, undo, adjudicate, retire) and
:mod:`~tasks.review.views` (reads); this module fills the queue, reconciles it with the
current ``qa`` output and runs transactions.

Concurrency: on SQLite every write transaction is ``BEGIN IMMEDIATE`` behind an in-process
writer lock (writers are serialised; reads use deferred snapshots); on PostgreSQL candidate
items are locked with ``FOR UPDATE SKIP LOCKED`` and re-checked after locking, and the
item-state row is locked before an item's decisions are counted. The (item, slot) primary
key of leases is the last line of defence.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import func, insert, select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from storage import addresses
from storage.hashing import stable_id
from storage.review_db import (
    Item,
    ItemState,
    Sql,
    create_schema,
    dbapi_errors,
    is_sqlite,
    make_engine,
    sql_transaction,
    write_lock,
)
from tasks.review.decisions import DecisionsMixin
from tasks.review.leasing import CANDIDATES_SQL as _CANDIDATES_SQL  # noqa: F401  (tests read the leasing query)
from tasks.review.leasing import LeasingMixin
from tasks.review.rules import (  # noqa: F401  (the queue's public names)
    REASONS,
    RETIRED,
    STAGES,
    VERDICTS,
    Account,
    LeaseLost,
    NotAllowed,
    QueueError,
    UnknownItem,
)
from tasks.review.views import ItemView, ViewsMixin  # noqa: F401

T = TypeVar("T")

SYSTEM_USER = "system:review-stage"  # the actor of retire / restore events


@dataclass
class ReconcileSummary:
    """What filling the queue from the current review/queue rows changed."""

    added: int = 0
    retired: int = 0
    restored: int = 0
    kept: int = 0


class ReviewQueue(LeasingMixin, DecisionsMixin, ViewsMixin):
    """Queue operations over one database. Thread-safe: each call runs its own transaction."""

    def __init__(
        self, engine: Engine, k: int = 1, lease_seconds: float = 900.0, clock: Callable[[], float] = time.time
    ):
        if k < 1:
            raise ValueError(f"review.k must be >= 1, got {k}")
        self.engine = engine
        self.k = int(k)
        self.lease_seconds = float(lease_seconds)
        self.clock = clock
        self._sqlite = is_sqlite(engine)
        self._write_lock = write_lock(engine)
        self._reader = engine.execution_options(review_read=True)  # deferred snapshot reads on SQLite
        self._dbapi_error = dbapi_errors(engine)  # what plain SQL (storage.review_db.Sql) raises

    @property
    def reader(self) -> Engine:
        """The engine for read-only work: on SQLite a deferred snapshot that never waits for
        (or blocks) writers; the same as :attr:`engine` on PostgreSQL."""
        return self._reader

    @classmethod
    def open(cls, url: str, k: int = 1, lease_minutes: float = 15.0, pool_size: int = 10, **kw: Any) -> ReviewQueue:
        engine = make_engine(url, pool_size)
        create_schema(engine)
        return cls(engine, k=k, lease_seconds=lease_minutes * 60.0, **kw)

    def close(self) -> None:
        self.engine.dispose()

    # -- filling -----------------------------------------------------------------------
    def enqueue(self, rows: Iterable[dict[str, Any]]) -> int:
        """Insert queue items that are not there yet (by id); returns how many were added."""
        rows = list(rows)
        added = 0
        for start in range(0, len(rows), 500):  # bounded IN lists and transactions
            batch = rows[start : start + 500]
            added += self._retry(lambda conn: self._enqueue(conn, batch))  # noqa: B023 (called at once, inside this iteration)
        return added

    def _enqueue(self, conn: Connection, rows: list[dict[str, Any]]) -> int:
        now = self.clock()
        have = set(conn.execute(select(Item.id).where(Item.id.in_([r["id"] for r in rows]))).scalars())
        seq = conn.execute(select(func.coalesce(func.max(Item.seq), 0))).scalar_one()
        new = []
        for r in rows:
            if r["id"] in have:
                continue
            have.add(r["id"])
            seq += 1
            new.append(
                {
                    "id": r["id"],
                    "stage": r["stage"],
                    "edit_id": r["edit_id"],
                    "parent_id": r.get("parent_id"),
                    "task": r["task"],
                    "variant": r["variant"],
                    "editor": r["editor"],
                    "seq": seq,
                    "payload_json": r["payload_json"],
                    "created_at": now,
                }
            )
        if new:
            conn.execute(insert(Item), new)
            parents = {r["parent_id"] for r in new if r["parent_id"]}
            accepted = set()
            if parents:
                accepted = set(
                    conn.execute(
                        select(ItemState.item_id).where(ItemState.item_id.in_(parents), ItemState.outcome == "accept")
                    ).scalars()
                )
            conn.execute(
                insert(ItemState),
                [
                    {
                        "item_id": r["id"],
                        "stage": r["stage"],
                        "seq": r["seq"],
                        "parent_id": r["parent_id"],
                        "outcome": "pending",
                        "n": 0,
                        "resolution_id": None,
                        "available": int(r["parent_id"] is None or r["parent_id"] in accepted),
                    }
                    for r in new
                ],
            )
        return len(new)

    def reconcile(self, rows: Iterable[dict[str, Any]], why: str = "no longer in qa/questions") -> ReconcileSummary:
        """Make the queue's live items match the current ``review/queue`` rows.

        An item is identified by its stage, edit and payload (what the page shows, questions
        included). Items with no current row are retired (an event; their decisions stay in the
        log), retired items whose row is back are restored, and rows with no item are added (a
        changed payload gets a new id, so a decision is never carried over to questions the
        annotator did not see). A first fill only adds."""
        rows = list(rows)

        def run(conn: Connection) -> ReconcileSummary:
            summary = ReconcileSummary()
            have = conn.execute(
                select(Item.id, Item.stage, Item.edit_id, Item.payload_json, ItemState.outcome).outerjoin(
                    ItemState, ItemState.item_id == Item.id
                )
            ).all()
            ids = {r.id for r in have}
            by_content = {(r.stage, r.edit_id, r.payload_json): r for r in have}
            id_map: dict[str, str] = {}
            to_add: list[dict[str, Any]] = []
            to_restore: list[Any] = []
            for r in rows:
                found = by_content.get((r["stage"], r["edit_id"], r["payload_json"]))
                if found is not None:
                    id_map[r["id"]] = found.id
                    (to_restore if found.outcome == RETIRED else []).append(found)
                    continue
                new_id = (
                    r["id"] if r["id"] not in ids else stable_id("review", r["stage"], r["edit_id"], r["payload_json"])
                )
                ids.add(new_id)
                id_map[r["id"]] = new_id
                to_add.append({**r, "id": new_id})
            for r in to_add:
                r["parent_id"] = id_map.get(r["parent_id"], r["parent_id"]) if r.get("parent_id") else None
            keep = set(id_map.values())
            to_retire = [r for r in have if r.id not in keep and r.outcome != RETIRED]
            now = self.clock()
            actor = _system_user(conn, now) if to_retire or to_restore else 0
            for r in sorted(to_retire, key=lambda r: r.stage):  # edit items first: their QA items close with them
                self._set_retired(Sql.over(conn), r.id, actor, now, True, why)
            summary.added = self._enqueue(conn, to_add) if to_add else 0
            for r in sorted(to_restore, key=lambda r: r.stage):
                self._set_retired(Sql.over(conn), r.id, actor, now, False, "back in qa/questions")
            summary.retired, summary.restored = len(to_retire), len(to_restore)
            summary.kept = len(keep) - summary.added - summary.restored
            return summary

        return self._retry(run)

    def _retry(self, fn: Callable[[Connection], T], attempts: int = 8) -> T:
        """Run ``fn`` in a SQLAlchemy transaction, retrying on lock conflicts and unique-key races."""
        for attempt in range(attempts):
            try:
                with self._write_lock, self.engine.begin() as conn:
                    return fn(conn)
            except (IntegrityError, OperationalError, DBAPIError, self._dbapi_error) as exc:
                if attempt == attempts - 1 or not _transient(exc):
                    raise
                time.sleep(0.005 * (attempt + 1))
        raise AssertionError("unreachable")

    def _run(self, fn: Callable[[Sql], T], write: bool = True, attempts: int = 8) -> T:
        """Run ``fn`` in a plain-SQL transaction (:func:`storage.review_db.sql_transaction`),
        retrying like :meth:`_retry`."""
        for attempt in range(attempts):
            try:
                with sql_transaction(self.engine, write) as sql:
                    return fn(sql)
            except self._dbapi_error as exc:
                if attempt == attempts - 1 or not _transient(exc):
                    raise
                time.sleep(0.005 * (attempt + 1))
        raise AssertionError("unreachable")


def _transient(exc: Exception) -> bool:
    """Lock timeouts, serialisation failures, deadlocks, unique-key races and connections lost
    to a database restart (before the transaction's ``COMMIT`` was sent) are retried."""
    lost = getattr(exc, "review_retry", None)
    if lost is not None:
        return bool(
            lost
        )  # a pooled connection the database closed (restart): retry afresh unless COMMIT was in flight
    if any(c.__name__ == "IntegrityError" for c in type(exc).__mro__) or getattr(exc, "connection_invalidated", False):
        return True  # a unique-key race, or a pooled connection the database closed (restart): retry afresh
    msg = str(getattr(exc, "orig", exc)).lower()
    return any(s in msg for s in ("locked", "deadlock", "could not serialize", "busy", "duplicate key", "unique"))


def count_queue_items(run_dir: str, db_url: str | None = None) -> int:
    """How many items the run's queue holds (0 when it has no queue database yet)."""
    from pathlib import Path

    from storage.review_db import DEFAULT_DB_NAME, sqlite_url

    if db_url is None:
        path = Path(run_dir) / addresses.REVIEW_DIR / DEFAULT_DB_NAME
        if not path.exists():
            return 0
        db_url = sqlite_url(str(path))
    queue = ReviewQueue.open(db_url)
    try:
        with queue.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(Item)).scalar_one())
    finally:
        queue.close()


def _system_user(conn: Connection, now: float) -> int:
    """The account that retire / restore events are attributed to (no login secret)."""
    from storage.review_db import User

    uid = conn.execute(select(User.id).where(User.name == SYSTEM_USER)).scalar_one_or_none()
    if uid is None:
        uid = conn.execute(
            insert(User).values(name=SYSTEM_USER, role="annotator", secret_hash=None, created_at=now)
        ).inserted_primary_key[0]
    return int(uid)

"""Reads of the review queue: item pages, history, progress, overviews. Nothing here writes.

Reads use the queue's reader engine: on SQLite a deferred snapshot that neither waits for
nor blocks writers.
"""

from __future__ import annotations

import json
from collections import namedtuple
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy import func, select, text
from sqlalchemy.engine import Connection, Engine, Row

from storage.review_db import Event, Item, ItemState, Sql, User, retry_lost_connection
from tasks.review.rules import RETIRED, Account, NotAllowed, UnknownItem, check_stage, latest_decision
from tasks.review.validation import question_state

# An item with the state cache, the user's lease on it and the user's latest decision/retract
# event, in one read (get_item, decide).
ITEM_SQL = """
SELECT i.id, i.stage, i.edit_id, i.task, i.variant, i.editor, i.payload_json, s.outcome,
       l.slot AS lease_slot, l.expires_at AS lease_expires_at,
       e.id AS ev_id, e.kind AS ev_kind, e.verdict AS ev_verdict, e.reasons_json AS ev_reasons_json, e.note AS ev_note
FROM review_items i
LEFT JOIN review_item_state s ON s.item_id = i.id
LEFT JOIN review_leases l ON l.item_id = i.id AND l.annotator_id = :me
LEFT JOIN review_events e ON e.id = (SELECT max(d.id) FROM review_events d
                                     WHERE d.item_id = i.id AND d.kind IN ('decision', 'retract') AND d.annotator_id = :me)
WHERE i.id = :item_id
"""
ItemRow = namedtuple(
    "ItemRow",
    "id stage edit_id task variant editor payload_json outcome lease_slot lease_expires_at ev_id ev_kind ev_verdict ev_reasons_json ev_note",
)


_PROGRESS_SQL = """
SELECT sum(CASE WHEN s.outcome != :retired THEN 1 ELSE 0 END),
       sum(CASE WHEN s.outcome IN ('accept', 'reject') THEN 1 ELSE 0 END),
       (SELECT count(DISTINCT e.item_id) FROM review_events e JOIN review_items i ON i.id = e.item_id
        WHERE e.annotator_id = :me AND e.kind = 'decision' AND i.stage = :stage)
FROM review_item_state s WHERE s.stage = :stage
"""


@dataclass
class ItemView:
    """An item as a page shows it: payload, current questions, the viewer's own decision."""

    id: str
    stage: str
    edit_id: str
    task: str
    variant: str
    editor: str
    payload: dict[str, Any]
    questions: list[dict[str, Any]] = field(default_factory=list)
    my_decision: dict[str, Any] | None = None
    lease_expires_at: float | None = None
    resolution: str = "pending"


@dataclass(frozen=True)
class _Latest:
    """The ``ev_*`` columns of a row as an event (for :func:`rules.latest_decision`)."""

    id: int
    kind: str
    verdict: str | None
    reasons_json: str | None
    note: str | None


def my_decision(row: Any) -> dict[str, Any] | None:
    """The user's current decision from a row carrying their latest decision/retract event (``ev_*``)."""
    if row is None or row.ev_id is None:
        return None
    ev = latest_decision(_Latest(row.ev_id, row.ev_kind, row.ev_verdict, row.ev_reasons_json, row.ev_note))
    if ev is None:
        return None
    return {
        "event_id": ev.id,
        "verdict": ev.verdict,
        "reasons": json.loads(ev.reasons_json or "[]"),
        "note": ev.note or "",
    }


def question_events(sql: Sql, item_id: str) -> list[dict[str, Any]]:
    rows = sql.rows(
        "SELECT kind, question_id, after_json FROM review_events "
        "WHERE item_id = :item_id AND kind IN ('question_edit', 'question_validity') ORDER BY id",
        {"item_id": item_id},
    )
    return [{"kind": kind, "question_id": qid, "after": json.loads(after)} for kind, qid, after in rows]


T = TypeVar("T")


class ViewsMixin:
    """The read side of ``ReviewQueue``."""

    _reader: Engine
    clock: Callable[[], float]

    def _read(self, fn: Callable[[Connection], T]) -> T:
        """``fn`` on a pooled read connection, again on a fresh one when the database had closed
        it: an admin page does not fail once after every database restart."""

        def once() -> T:
            with self._reader.connect() as conn:
                return fn(conn)

        return retry_lost_connection(once)

    def get_item(self, user: Account, item_id: str) -> ItemView:
        """An item the user may see: admins any; annotators only items leased to them or
        that they decided before."""
        return self._run(lambda sql: self._get_item(sql, user, item_id), write=False)  # type: ignore[attr-defined]

    def _get_item(self, sql: Sql, user: Account, item_id: str) -> ItemView:
        """:meth:`get_item` in the caller's transaction (``next_views`` reads in its leasing transaction)."""
        found = sql.row(ITEM_SQL, {"item_id": item_id, "me": user.id})
        if found is None:
            raise UnknownItem(f"no review item {item_id!r}")
        item = ItemRow._make(found)
        lease = item.lease_expires_at
        decided_before = item.ev_id is not None  # a retract always follows a decision of the same user
        if not user.is_admin and lease is None and not decided_before:
            raise NotAllowed(f"item {item_id!r} is not leased to {user.name!r}")
        return self._view(sql, item[:7], my_decision(item), lease, item.outcome or "pending")

    def _leased_view(self, sql: Sql, candidate: tuple, lease_expires_at: float) -> ItemView:
        """The view of an item the user leased in this transaction from its candidate row (id,
        stage, edit_id, task, variant, editor, payload_json): no decision of theirs, pending."""
        return self._view(sql, candidate, None, lease_expires_at, "pending")

    @staticmethod
    def _view(
        sql: Sql, item: tuple, mine: dict[str, Any] | None, lease_expires_at: float | None, resolution: str
    ) -> ItemView:
        item_id, stage, edit_id, task, variant, editor, payload_json = item
        payload = json.loads(payload_json)
        questions = (
            question_state(payload.get("questions", []), question_events(sql, item_id)) if stage == "qa" else []
        )
        return ItemView(
            id=item_id,
            stage=stage,
            edit_id=edit_id,
            task=task,
            variant=variant,
            editor=editor,
            payload=payload,
            questions=questions,
            my_decision=mine,
            lease_expires_at=lease_expires_at,
            resolution=resolution,
        )

    def previous(self, user: Account, stage: str, before_event: int | None = None) -> tuple[str, int] | None:
        """The item of the user's decision just before ``before_event`` (newest when None)."""
        check_stage(stage)
        q = (
            select(Event.item_id, Event.id)
            .join(Item, Item.id == Event.item_id)
            .where(Event.annotator_id == user.id, Event.kind == "decision", Item.stage == stage)
        )
        if before_event is not None:
            q = q.where(Event.id < before_event)
        row = self._read(lambda conn: conn.execute(q.order_by(Event.id.desc()).limit(1)).first())
        return (row.item_id, int(row.id)) if row else None

    def resolutions(self, conn: Connection | None = None) -> dict[str, tuple[str, int]]:
        """Latest resolution per item: {item_id: (outcome, n decisions)}."""
        sql = text(
            "SELECT e.item_id, e.verdict, e.n FROM review_events e JOIN "
            "(SELECT item_id, max(id) AS mid FROM review_events WHERE kind = 'resolution' GROUP BY item_id) m ON e.id = m.mid"
        )
        rows = lambda c: {r.item_id: (r.verdict, r.n or 0) for r in c.execute(sql)}  # noqa: E731
        return self._read(rows) if conn is None else rows(conn)

    def progress(self, user: Account, stage: str) -> dict[str, int]:
        """Counts for the progress bars: the user's decisions and the stage's resolved items
        (retired items are not counted)."""
        check_stage(stage)
        total, resolved, mine = self._run(
            lambda sql: sql.row(_PROGRESS_SQL, {"stage": stage, "me": user.id, "retired": RETIRED}), write=False
        )  # type: ignore[attr-defined]
        return {"total": int(total or 0), "resolved": int(resolved or 0), "mine": int(mine)}

    def item_states(self) -> dict[str, tuple[str, int, int]]:
        """The derived item-state cache: {item_id: (outcome, n decisions, available 0|1)}."""
        q = select(ItemState.item_id, ItemState.outcome, ItemState.n, ItemState.available)
        return self._read(lambda conn: {r.item_id: (r.outcome, r.n, r.available) for r in conn.execute(q)})

    def disputed(self) -> list[str]:
        res = self.resolutions()
        order = self._read(lambda conn: list(conn.execute(select(Item.id).order_by(Item.seq)).scalars()))
        return [i for i in order if res.get(i, ("pending", 0))[0] == "disputed"]

    def users(self) -> dict[int, Account]:
        return self._read(
            lambda conn: {
                r.id: Account(r.id, r.name, r.role) for r in conn.execute(select(User.id, User.name, User.role))
            }
        )

    def events(
        self, kinds: tuple[str, ...] | None = None, item_id: str | None = None, upto: int | None = None
    ) -> list[Row]:
        """Event rows in order, optionally of some kinds, one item, and up to event id ``upto``."""
        q = select(Event)
        if kinds:
            q = q.where(Event.kind.in_(kinds))
        if item_id is not None:
            q = q.where(Event.item_id == item_id)
        if upto is not None:
            q = q.where(Event.id <= upto)
        return self._read(lambda conn: list(conn.execute(q.order_by(Event.id))))

    def log_position(self) -> int:
        """The id of the newest event (0 for an empty log): the position a reader has seen."""
        return self._read(lambda conn: int(conn.execute(select(func.coalesce(func.max(Event.id), 0))).scalar_one()))

    def items(self, with_payload: bool = False, live_only: bool = False) -> list[Row]:
        """Queue items in queue order (``live_only``: without retired ones)."""
        cols = [Item.id, Item.stage, Item.edit_id, Item.parent_id, Item.task, Item.variant, Item.editor, Item.seq]
        if with_payload:
            cols.append(Item.payload_json)
        q = select(*cols)
        if live_only:
            q = q.join(ItemState, ItemState.item_id == Item.id).where(ItemState.outcome != RETIRED)
        return self._read(lambda conn: list(conn.execute(q.order_by(Item.seq))))

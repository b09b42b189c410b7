"""The review queue: leases with timeout, k-fold annotation, append-only decisions.

Every state change is an inserted event; the state of an item is derived from its events:
the current decision of an annotator is their latest ``decision`` or ``retract`` event, and
each change appends a ``resolution`` event (accept | reject | disputed | pending, with ``n``
current decisions). The latest resolution of each item is mirrored in ``review_item_state``
in the same transaction (a derived cache, rebuildable from the events with
``storage.review_db.sync_item_state``), which the leasing query reads through an index.
Leases are the only rows that are deleted: they say who holds an item right now, not what
was decided.

Concurrency: on SQLite every write transaction is ``BEGIN IMMEDIATE`` behind an in-process
writer lock (writers are serialised; reads use deferred snapshots); on PostgreSQL candidate
items are locked with ``FOR UPDATE SKIP LOCKED`` and re-checked after locking, and the
item-state row is locked before an item's decisions are counted. The (item, slot) primary
key of leases is the last line of defence.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from sqlalchemy import delete, func, insert, select, text, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from storage.review_db import Event, Item, ItemState, Lease, User, create_schema, is_sqlite, make_engine, write_lock
from tasks.review.validation import QuestionError, apply_question_update, question_state

STAGES: tuple[str, ...] = ("edit", "qa")

# Reason codes for rejecting an edit (stage 1, and again at QA review as a second look).
REASONS: dict[str, str] = {
    "not_executed": "Edit not executed",
    "artifacts": "Visible artifacts",
    "ghost_remnants": "Ghost remnants of the object",
    "background_altered": "Background altered",
    "ambiguous_same_type": "Ambiguous: a same-type object remains",
    "other": "Other (write a note)",
}
VERDICTS: tuple[str, ...] = ("accept", "reject")


class QueueError(Exception):
    """A request the queue refuses; the message says why."""


class UnknownItem(QueueError):
    pass


class NotAllowed(QueueError):
    pass


class LeaseLost(QueueError):
    """The lease expired and the item went to someone else: the decision was not recorded."""


@dataclass(frozen=True)
class Account:
    id: int
    name: str
    role: str

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


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


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


_PARENT_OK_SQL = (
    "CASE WHEN review_item_state.parent_id IS NULL OR EXISTS (SELECT 1 FROM review_item_state p "
    "WHERE p.item_id = review_item_state.parent_id AND p.outcome = 'accept') THEN 1 ELSE 0 END"
)

# An item with the state cache, the user's lease on it and the user's latest decision/retract
# event, in one read (get_item, decide).
_ITEM_SQL = """
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

# Open items come from the derived item-state table through its (stage, available, seq) index:
# resolved items and QA items whose edit is not accepted are never visited.
_CANDIDATES_SQL = """
SELECT s.item_id FROM review_item_state s
WHERE s.stage = :stage AND s.available = 1
  AND s.n + (SELECT count(*) FROM review_leases l WHERE l.item_id = s.item_id AND l.expires_at > :now) < :k
  AND NOT EXISTS (SELECT 1 FROM review_events d WHERE d.item_id = s.item_id AND d.kind = 'decision' AND d.annotator_id = :me)
  AND NOT EXISTS (SELECT 1 FROM review_leases m WHERE m.item_id = s.item_id AND m.annotator_id = :me)
ORDER BY s.seq
LIMIT :limit
"""


class ReviewQueue:
    """Queue operations over one database. Thread-safe: each call runs its own transaction."""

    def __init__(self, engine: Engine, k: int = 1, lease_seconds: float = 900.0, clock: Callable[[], float] = time.time):
        if k < 1:
            raise ValueError(f"review.k must be >= 1, got {k}")
        self.engine = engine
        self.k = int(k)
        self.lease_seconds = float(lease_seconds)
        self.clock = clock
        self._sqlite = is_sqlite(engine)
        self._write_lock = write_lock(engine)
        self._reader = engine.execution_options(review_read=True)  # deferred snapshot reads on SQLite

    @property
    def reader(self) -> Engine:
        """The engine for read-only work: on SQLite a deferred snapshot that never waits for
        (or blocks) writers; the same as :attr:`engine` on PostgreSQL."""
        return self._reader

    @classmethod
    def open(cls, url: str, k: int = 1, lease_minutes: float = 15.0, **kw: Any) -> "ReviewQueue":
        engine = make_engine(url)
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
            added += self._retry(lambda conn: self._enqueue(conn, batch))
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
                    conn.execute(select(ItemState.item_id).where(ItemState.item_id.in_(parents), ItemState.outcome == "accept")).scalars()
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

    # -- leasing -----------------------------------------------------------------------
    def next_items(self, user: Account, stage: str, want: int = 2) -> list[str]:
        """Items leased to ``user`` in ``stage``, topped up to ``want`` (the first is shown, the
        second preloaded). Renews the user's leases in that stage."""
        _check_stage(stage)
        return self._retry(lambda conn: self._next_items(conn, user, stage, want))

    def _next_items(self, conn: Connection, user: Account, stage: str, want: int) -> list[str]:
        now = self.clock()
        renewed = conn.execute(
            update(Lease)
            .where(Lease.annotator_id == user.id, Lease.stage == stage)
            .values(expires_at=now + self.lease_seconds)
            .returning(Lease.item_id, Lease.leased_at)
        ).all()
        mine = [r.item_id for r in sorted(renewed, key=lambda r: (r.leased_at, r.item_id))]
        sql = _CANDIDATES_SQL + ("" if self._sqlite else " FOR UPDATE OF s SKIP LOCKED")
        for _round in range(10):  # a candidate can turn out taken (PostgreSQL snapshot race); try the next ones
            need = want - len(mine)
            if need <= 0:
                break
            params = {"stage": stage, "now": now, "k": self.k, "me": user.id, "limit": need}
            candidates = list(conn.execute(text(sql), params).scalars())
            if not candidates:
                break
            for item_id in candidates:
                if self._try_lease(conn, item_id, user, stage, now):
                    mine.append(item_id)
        return mine[: max(want, 1)]

    def _try_lease(self, conn: Connection, item_id: str, user: Account, stage: str, now: float) -> bool:
        # one read for the item's state and all its lease slots; expired slots are freed
        rows = conn.execute(
            select(ItemState.available, ItemState.n, Lease.slot, Lease.expires_at)
            .outerjoin(Lease, Lease.item_id == ItemState.item_id)
            .where(ItemState.item_id == item_id)
        ).all()
        if not rows or not rows[0].available:
            return False
        if any(r.slot is not None and r.expires_at <= now for r in rows):
            conn.execute(delete(Lease).where(Lease.item_id == item_id, Lease.expires_at <= now))
        active = {r.slot for r in rows if r.slot is not None and r.expires_at > now}
        if rows[0].n + len(active) >= self.k:
            return False
        slot = min(set(range(self.k)) - active)
        conn.execute(
            insert(Lease).values(
                item_id=item_id, slot=slot, annotator_id=user.id, stage=stage, leased_at=now, expires_at=now + self.lease_seconds
            )
        )
        return True

    def _retry(self, fn: Callable[[Connection], Any], attempts: int = 8) -> Any:
        """Run ``fn`` in a transaction, retrying on lock conflicts and unique-key races."""
        for attempt in range(attempts):
            try:
                with self._write_lock, self.engine.begin() as conn:
                    return fn(conn)
            except (IntegrityError, OperationalError, DBAPIError) as exc:
                if attempt == attempts - 1 or not _transient(exc):
                    raise
                time.sleep(0.005 * (attempt + 1))
        raise AssertionError("unreachable")

    # -- reading -----------------------------------------------------------------------
    def get_item(self, user: Account, item_id: str) -> ItemView:
        """An item the user may see: admins any; annotators only items leased to them or
        that they decided before."""
        with self._reader.connect() as conn:
            item = conn.execute(text(_ITEM_SQL), {"item_id": item_id, "me": user.id}).first()
            if item is None:
                raise UnknownItem(f"no review item {item_id!r}")
            lease = item.lease_expires_at
            mine = _decision_dict(item)
            decided_before = item.ev_id is not None  # a retract always follows a decision of the same user
            if not user.is_admin and lease is None and not decided_before:
                raise NotAllowed(f"item {item_id!r} is not leased to {user.name!r}")
            payload = json.loads(item.payload_json)
            questions = question_state(payload.get("questions", []), self._question_events(conn, item_id)) if item.stage == "qa" else []
            verdict = item.outcome or "pending"
            return ItemView(
                id=item.id,
                stage=item.stage,
                edit_id=item.edit_id,
                task=item.task,
                variant=item.variant,
                editor=item.editor,
                payload=payload,
                questions=questions,
                my_decision=mine,
                lease_expires_at=lease,
                resolution=verdict,
            )

    def _my_decision(self, conn: Connection, item_id: str, user_id: int) -> dict[str, Any] | None:
        row = conn.execute(
            select(
                Event.id.label("ev_id"),
                Event.kind.label("ev_kind"),
                Event.verdict.label("ev_verdict"),
                Event.reasons_json.label("ev_reasons_json"),
                Event.note.label("ev_note"),
            )
            .where(Event.item_id == item_id, Event.kind.in_(("decision", "retract")), Event.annotator_id == user_id)
            .order_by(Event.id.desc())
            .limit(1)
        ).first()
        return _decision_dict(row)

    def _question_events(self, conn: Connection, item_id: str) -> list[dict[str, Any]]:
        rows = conn.execute(
            select(Event.kind, Event.question_id, Event.after_json)
            .where(Event.item_id == item_id, Event.kind.in_(("question_edit", "question_validity")))
            .order_by(Event.id)
        )
        return [{"kind": r.kind, "question_id": r.question_id, "after": json.loads(r.after_json)} for r in rows]

    def _resolution(self, conn: Connection, item_id: str) -> tuple[str, int]:
        row = conn.execute(
            select(Event.verdict, Event.n).where(Event.item_id == item_id, Event.kind == "resolution").order_by(Event.id.desc()).limit(1)
        ).first()
        return (row.verdict, row.n or 0) if row else ("pending", 0)

    def _current_decisions(self, conn: Connection, item_id: str) -> tuple[dict[int, dict[str, Any]], str | None]:
        """Each annotator's current decision on the item, and the latest adjudication (one read)."""
        latest: dict[int, Any] = {}
        adjudication = None
        for r in conn.execute(
            select(Event.id, Event.annotator_id, Event.kind, Event.verdict, Event.reasons_json)
            .where(Event.item_id == item_id, Event.kind.in_(("decision", "retract", "adjudication")))
            .order_by(Event.id)
        ):
            if r.kind == "adjudication":
                adjudication = r.verdict
            else:
                latest[r.annotator_id] = r
        current = {a: {"verdict": r.verdict, "reasons": json.loads(r.reasons_json or "[]")} for a, r in latest.items() if r.kind == "decision"}
        return current, adjudication

    # -- deciding ----------------------------------------------------------------------
    def decide(
        self,
        user: Account,
        item_id: str,
        verdict: str,
        reasons: list[str] | None = None,
        note: str = "",
        question_updates: dict[str, dict[str, Any]] | None = None,
        source_ref: str | None = None,
    ) -> int:
        """Record a decision (and, at QA review, inline question edits) as new events.

        Needs the user's lease on the item, or an earlier decision of theirs (changing it).
        Raises :class:`LeaseLost` when the lease was taken over, :class:`QuestionError` (with
        the question and field) when an inline edit is invalid; nothing is written then."""
        reasons = _check_verdict(verdict, reasons or [], note)
        return self._retry(lambda conn: self._decide(conn, user, item_id, verdict, reasons, note, question_updates or {}, source_ref))

    def _decide(
        self,
        conn: Connection,
        user: Account,
        item_id: str,
        verdict: str,
        reasons: list[str],
        note: str,
        question_updates: dict[str, dict[str, Any]],
        source_ref: str | None,
    ) -> int:
        now = self.clock()
        item = conn.execute(text(_ITEM_SQL), {"item_id": item_id, "me": user.id}).first()  # item, my lease, my latest decision
        if item is None:
            raise UnknownItem(f"no review item {item_id!r}")
        lease = item.lease_slot
        mine = _decision_dict(item)
        if lease is None and mine is None:
            raise LeaseLost(f"item {item_id} is no longer leased to {user.name!r} (lease expired and the item was reassigned); take the next item")
        if question_updates and item.stage != "qa":
            raise QueueError(f"item {item_id} is an edit-verification item; questions are edited at QA review")
        new_events: list[dict[str, Any]] = []
        if question_updates:
            payload = json.loads(item.payload_json)
            current = {q["id"]: q for q in question_state(payload.get("questions", []), self._question_events(conn, item_id))}
            for qid, upd in sorted(question_updates.items()):
                if qid not in current:
                    raise QuestionError(qid, "id", f"question {qid!r} does not belong to item {item_id}")
                new_events.extend(apply_question_update(current[qid], upd))
        event_id = self._record_decision(conn, user, item_id, now, verdict, reasons, note, mine, source_ref)
        for ev in new_events:
            conn.execute(insert(Event).values(item_id=item_id, annotator_id=user.id, created_at=now, **ev))
        if lease is not None:
            conn.execute(delete(Lease).where(Lease.item_id == item_id, Lease.annotator_id == user.id))
        self._resolve(conn, item_id, user.id, now)
        return event_id

    @staticmethod
    def _record_decision(
        conn: Connection, user: Account, item_id: str, now: float, verdict: str, reasons: list[str], note: str,
        before: dict[str, Any] | None, source_ref: str | None,
    ) -> int:
        """Append one decision event (with the annotator's previous decision as ``before``)."""
        result = conn.execute(
            insert(Event).values(
                item_id=item_id,
                annotator_id=user.id,
                created_at=now,
                kind="decision",
                verdict=verdict,
                reasons_json=_dumps(reasons),
                note=note or None,
                before_json=_dumps(before) if before else None,
                after_json=_dumps({"verdict": verdict, "reasons": reasons, "note": note}),
                source_ref=source_ref,
            )
        )
        return int(result.inserted_primary_key[0])

    def import_decision(self, user: Account, item_id: str, verdict: str, reasons: list[str], note: str, source_ref: str) -> int | None:
        """Record a decision made in another tool (Label Studio) without a lease; idempotent by
        ``source_ref``. Returns the event id, or None when that decision was imported before."""
        reasons = _check_verdict(verdict, reasons, note)

        def run(conn: Connection) -> int | None:
            if conn.execute(select(Event.id).where(Event.source_ref == source_ref)).first() is not None:
                return None
            if conn.execute(select(Item.id).where(Item.id == item_id)).first() is None:
                raise UnknownItem(f"no review item {item_id!r}")
            now = self.clock()
            mine = self._my_decision(conn, item_id, user.id)
            event_id = self._record_decision(conn, user, item_id, now, verdict, reasons, note, mine, source_ref)
            conn.execute(delete(Lease).where(Lease.item_id == item_id, Lease.annotator_id == user.id))
            self._resolve(conn, item_id, user.id, now)
            return event_id

        return self._retry(run)

    def _resolve(self, conn: Connection, item_id: str, actor: int, now: float) -> None:
        """Append a resolution event when the derived outcome (or decision count) changed, and
        mirror it in the item-state cache in the same transaction."""
        # Lock the item's state row first (PostgreSQL): two annotators deciding the same item at
        # once are counted one after the other, each seeing the other's committed decision.
        state_q = select(ItemState.outcome, ItemState.n).where(ItemState.item_id == item_id)
        state = conn.execute(state_q if self._sqlite else state_q.with_for_update()).first()
        current, adj = self._current_decisions(conn, item_id)
        verdicts = {d["verdict"] for d in current.values()}
        if adj:
            outcome = adj
        elif len(current) >= self.k:
            outcome = verdicts.pop() if len(verdicts) == 1 else "disputed"
        else:
            outcome = "pending"
        before = (state.outcome, state.n) if state is not None else self._resolution(conn, item_id)
        if (outcome, len(current)) == before:
            return
        res = conn.execute(
            insert(Event).values(
                item_id=item_id,
                annotator_id=actor,
                created_at=now,
                kind="resolution",
                verdict=outcome,
                n=len(current),
                after_json=_dumps({"outcome": outcome, "decisions": len(current), "adjudicated": bool(adj)}),
            )
        )
        self._set_state(conn, item_id, outcome, len(current), int(res.inserted_primary_key[0]), was_accepted=before[0] == "accept")

    def _set_state(self, conn: Connection, item_id: str, outcome: str, n: int, resolution_id: int, was_accepted: bool) -> None:
        """Mirror a new resolution event in ``review_item_state``; when the item's acceptance
        changed, open or close the QA items waiting for it."""
        available = _PARENT_OK_SQL if outcome == "pending" else "0"  # SET sees the old row: decide on the new outcome here
        conn.execute(
            text(f"UPDATE review_item_state SET outcome = :outcome, n = :n, resolution_id = :rid, available = {available} WHERE item_id = :item_id"),
            {"outcome": outcome, "n": n, "rid": resolution_id, "item_id": item_id},
        )
        if was_accepted != (outcome == "accept"):
            children = "CASE WHEN outcome = 'pending' THEN 1 ELSE 0 END" if outcome == "accept" else "0"
            conn.execute(text(f"UPDATE review_item_state SET available = {children} WHERE parent_id = :item_id"), {"item_id": item_id})

    def retract_last(self, user: Account, stage: str) -> str | None:
        """Undo: withdraw the user's latest decision in ``stage`` and lease the item back to
        them. Returns the item id, or None when there is nothing to undo."""
        _check_stage(stage)
        return self._retry(lambda conn: self._retract_last(conn, user, stage))

    def _retract_last(self, conn: Connection, user: Account, stage: str) -> str | None:
        now = self.clock()
        row = conn.execute(
            select(Event.item_id)
            .join(Item, Item.id == Event.item_id)
            .where(Event.annotator_id == user.id, Event.kind.in_(("decision", "retract")), Item.stage == stage)
            .order_by(Event.id.desc())
            .limit(1)
        ).first()
        if row is None:
            return None
        mine = self._my_decision(conn, row.item_id, user.id)
        if mine is None:
            return None  # the latest action already was an undo
        if self._adjudicated(conn, row.item_id):
            raise NotAllowed(f"item {row.item_id} was adjudicated; its decisions can no longer be undone")
        conn.execute(
            insert(Event).values(
                item_id=row.item_id,
                annotator_id=user.id,
                created_at=now,
                kind="retract",
                before_json=_dumps(mine),
                after_json=None,
            )
        )
        conn.execute(delete(Lease).where(Lease.item_id == row.item_id, Lease.expires_at <= now))
        active = set(conn.execute(select(Lease.slot).where(Lease.item_id == row.item_id)).scalars())
        free = sorted(set(range(self.k)) - active)
        if free:  # leased_at before the user's other leases, so the undone item is shown first
            first = conn.execute(select(func.min(Lease.leased_at)).where(Lease.annotator_id == user.id)).scalar_one_or_none()
            conn.execute(
                insert(Lease).values(
                    item_id=row.item_id, slot=free[0], annotator_id=user.id, stage=stage, leased_at=min(now, (first or now) - 1.0), expires_at=now + self.lease_seconds
                )
            )
        self._resolve(conn, row.item_id, user.id, now)
        return row.item_id

    def _adjudicated(self, conn: Connection, item_id: str) -> bool:
        return bool(
            conn.execute(select(func.count()).select_from(Event).where(Event.item_id == item_id, Event.kind == "adjudication")).scalar_one()
        )

    def previous(self, user: Account, stage: str, before_event: int | None = None) -> tuple[str, int] | None:
        """The item of the user's decision just before ``before_event`` (newest when None)."""
        _check_stage(stage)
        with self._reader.connect() as conn:
            q = (
                select(Event.item_id, Event.id)
                .join(Item, Item.id == Event.item_id)
                .where(Event.annotator_id == user.id, Event.kind == "decision", Item.stage == stage)
            )
            if before_event is not None:
                q = q.where(Event.id < before_event)
            row = conn.execute(q.order_by(Event.id.desc()).limit(1)).first()
            return (row.item_id, int(row.id)) if row else None

    def adjudicate(self, admin: Account, item_id: str, verdict: str, note: str = "") -> int:
        """An admin settles a disputed item; the adjudication overrides the annotators."""
        if not admin.is_admin:
            raise NotAllowed("only admins adjudicate")
        _check_verdict(verdict, [], note, need_reason=False)

        def run(conn: Connection) -> int:
            now = self.clock()
            if conn.execute(select(Item.id).where(Item.id == item_id)).first() is None:
                raise UnknownItem(f"no review item {item_id!r}")
            before, _ = self._resolution(conn, item_id)
            res = conn.execute(
                insert(Event).values(
                    item_id=item_id,
                    annotator_id=admin.id,
                    created_at=now,
                    kind="adjudication",
                    verdict=verdict,
                    note=note or None,
                    before_json=_dumps({"outcome": before}),
                    after_json=_dumps({"verdict": verdict, "note": note}),
                )
            )
            self._resolve(conn, item_id, admin.id, now)
            return int(res.inserted_primary_key[0])

        return self._retry(run)

    # -- overview ----------------------------------------------------------------------
    def resolutions(self, conn: Connection | None = None) -> dict[str, tuple[str, int]]:
        """Latest resolution per item: {item_id: (outcome, n decisions)}."""
        sql = text(
            "SELECT e.item_id, e.verdict, e.n FROM review_events e JOIN "
            "(SELECT item_id, max(id) AS mid FROM review_events WHERE kind = 'resolution' GROUP BY item_id) m ON e.id = m.mid"
        )
        if conn is None:
            with self._reader.connect() as c:
                return {r.item_id: (r.verdict, r.n or 0) for r in c.execute(sql)}
        return {r.item_id: (r.verdict, r.n or 0) for r in conn.execute(sql)}

    def progress(self, user: Account, stage: str) -> dict[str, int]:
        """Counts for the progress bars: the user's decisions and the stage's resolved items."""
        _check_stage(stage)
        with self._reader.connect() as conn:
            total = conn.execute(select(func.count()).select_from(Item).where(Item.stage == stage)).scalar_one()
            resolved = conn.execute(
                select(func.count()).select_from(ItemState).where(ItemState.stage == stage, ItemState.outcome.in_(("accept", "reject")))
            ).scalar_one()
            mine = conn.execute(
                select(func.count(func.distinct(Event.item_id)))
                .select_from(Event)
                .join(Item, Item.id == Event.item_id)
                .where(Event.annotator_id == user.id, Event.kind == "decision", Item.stage == stage)
            ).scalar_one()
        return {"total": int(total), "resolved": int(resolved), "mine": int(mine)}

    def item_states(self) -> dict[str, tuple[str, int, int]]:
        """The derived item-state cache: {item_id: (outcome, n decisions, available 0|1)}."""
        with self._reader.connect() as conn:
            return {r.item_id: (r.outcome, r.n, r.available) for r in conn.execute(select(ItemState.item_id, ItemState.outcome, ItemState.n, ItemState.available))}

    def disputed(self) -> list[str]:
        res = self.resolutions()
        with self._reader.connect() as conn:
            order = list(conn.execute(select(Item.id).order_by(Item.seq)).scalars())
        return [i for i in order if res.get(i, ("pending", 0))[0] == "disputed"]

    def users(self) -> dict[int, Account]:
        with self._reader.connect() as conn:
            return {r.id: Account(r.id, r.name, r.role) for r in conn.execute(select(User.id, User.name, User.role))}

    def events(self, kinds: tuple[str, ...] | None = None, item_id: str | None = None) -> list[Any]:
        """Event rows in order, optionally of some kinds and one item."""
        with self._reader.connect() as conn:
            q = select(Event)
            if kinds:
                q = q.where(Event.kind.in_(kinds))
            if item_id is not None:
                q = q.where(Event.item_id == item_id)
            return list(conn.execute(q.order_by(Event.id)))

    def items(self, with_payload: bool = False) -> list[Any]:
        cols = [Item.id, Item.stage, Item.edit_id, Item.parent_id, Item.task, Item.variant, Item.editor, Item.seq]
        if with_payload:
            cols.append(Item.payload_json)
        with self._reader.connect() as conn:
            return list(conn.execute(select(*cols).order_by(Item.seq)))

    def active_leases(self) -> int:
        with self._reader.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(Lease).where(Lease.expires_at > self.clock())).scalar_one())


def _decision_dict(row: Any) -> dict[str, Any] | None:
    """The user's current decision from a row with their latest decision/retract event (``ev_*``)."""
    if row is None or row.ev_kind != "decision":
        return None
    return {"event_id": row.ev_id, "verdict": row.ev_verdict, "reasons": json.loads(row.ev_reasons_json or "[]"), "note": row.ev_note or ""}


def _check_stage(stage: str) -> None:
    if stage not in STAGES:
        raise QueueError(f"unknown review stage {stage!r}; stages: {', '.join(STAGES)}")


def _check_verdict(verdict: str, reasons: list[str], note: str, need_reason: bool = True) -> list[str]:
    if verdict not in VERDICTS:
        raise QueueError(f"verdict must be one of {', '.join(VERDICTS)}, got {verdict!r}")
    unknown = [r for r in reasons if r not in REASONS]
    if unknown:
        raise QueueError(f"unknown reason code(s) {unknown}; codes: {', '.join(REASONS)}")
    reasons = sorted(set(reasons), key=list(REASONS).index)
    if verdict == "accept" and reasons:
        raise QueueError("an accepted item takes no reject reasons")
    if verdict == "reject" and need_reason and not reasons:
        raise QueueError("a rejection needs at least one reason code")
    if "other" in reasons and not note.strip():
        raise QueueError("reason 'other' needs a note saying what is wrong")
    return reasons


def _transient(exc: Exception) -> bool:
    """Lock timeouts, serialisation failures, deadlocks and unique-key races are retried."""
    if isinstance(exc, IntegrityError):
        return True
    msg = str(getattr(exc, "orig", exc)).lower()
    return any(s in msg for s in ("locked", "deadlock", "could not serialize", "busy", "duplicate key", "unique"))


def count_queue_items(run_dir: str, db_url: str | None = None) -> int:
    """How many items the run's queue holds (0 when it has no queue database yet)."""
    from pathlib import Path

    from storage.review_db import DEFAULT_DB_NAME, sqlite_url

    if db_url is None:
        path = Path(run_dir) / "review" / DEFAULT_DB_NAME
        if not path.exists():
            return 0
        db_url = sqlite_url(str(path))
    queue = ReviewQueue.open(db_url)
    try:
        with queue.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(Item)).scalar_one())
    finally:
        queue.close()

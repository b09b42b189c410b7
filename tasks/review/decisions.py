"""Deciding: decisions, undo, adjudication and retirement, each appended as events.

After every change the item's outcome is recomputed with :func:`rules.item_outcome` from the
current decisions (:func:`rules.current_decisions`); when it changed a ``resolution`` event
is appended and mirrored in ``review_item_state`` in the same transaction. On PostgreSQL the
item-state row is locked before the item's decisions are counted, so two annotators deciding
one item at once are counted one after the other.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import delete, func, insert, select, text
from sqlalchemy.engine import Connection

from storage.review_db import Event, Item, ItemState, Lease
from tasks.review.rules import (
    RETIRED,
    Account,
    LeaseLost,
    NotAllowed,
    QueueError,
    UnknownItem,
    check_stage,
    check_verdict,
    current_decisions,
    item_outcome,
    latest_by_item,
)
from tasks.review.validation import QuestionError, apply_question_update, question_state
from tasks.review.views import ITEM_SQL, my_decision, question_events

_PARENT_OK_SQL = (
    "CASE WHEN review_item_state.parent_id IS NULL OR EXISTS (SELECT 1 FROM review_item_state p "
    "WHERE p.item_id = review_item_state.parent_id AND p.outcome = 'accept') THEN 1 ELSE 0 END"
)


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _retired_refusal(item_id: str) -> NotAllowed:
    return NotAllowed(f"item {item_id} was retired (its edit or questions are no longer in qa/questions); take the next item")


def _question_update_events(conn: Connection, item: Any, question_updates: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The question events of a decision's inline edits (``item``: a row with id, stage and
    payload_json); raises :class:`QuestionError` before anything is written."""
    if not question_updates:
        return []
    if item.stage != "qa":
        raise QueueError(f"item {item.id} is an edit-verification item; questions are edited at QA review")
    payload = json.loads(item.payload_json)
    current = {q["id"]: q for q in question_state(payload.get("questions", []), question_events(conn, item.id))}
    new_events: list[dict[str, Any]] = []
    for qid, upd in sorted(question_updates.items()):
        if qid not in current:
            raise QuestionError(qid, "id", f"question {qid!r} does not belong to item {item.id}")
        new_events.extend(apply_question_update(current[qid], upd))
    return new_events


class DecisionsMixin:
    """The write side of ``ReviewQueue`` (besides leasing and filling)."""

    k: int
    lease_seconds: float
    clock: Any
    _sqlite: bool

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
        reasons = check_verdict(verdict, reasons or [], note)
        return self._retry(lambda conn: self._decide(conn, user, item_id, verdict, reasons, note, question_updates or {}, source_ref))  # type: ignore[attr-defined]

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
        item = conn.execute(text(ITEM_SQL), {"item_id": item_id, "me": user.id}).first()  # item, my lease, my latest decision
        if item is None:
            raise UnknownItem(f"no review item {item_id!r}")
        if item.outcome == RETIRED:
            raise _retired_refusal(item_id)
        lease = item.lease_slot
        mine = my_decision(item)
        if lease is None and mine is None:
            raise self._not_leased(conn, item_id, user, now)
        new_events = _question_update_events(conn, item, question_updates)
        event_id = self._record_decision(conn, user, item_id, now, verdict, reasons, note, mine, source_ref)
        for ev in new_events:
            conn.execute(insert(Event).values(item_id=item_id, annotator_id=user.id, created_at=now, **ev))
        if lease is not None:
            conn.execute(delete(Lease).where(Lease.item_id == item_id, Lease.annotator_id == user.id))
        self._resolve(conn, item_id, user.id, now)
        return event_id

    def _not_leased(self, conn: Connection, item_id: str, user: Account, now: float) -> LeaseLost:
        """Why ``user`` may not decide ``item_id``, told as it is now: another annotator holds
        it, it needs no more decisions, or nobody leased it to the user (a lease ends
        ``lease_seconds`` after the user's last request)."""
        held = conn.execute(
            select(func.count()).select_from(Lease).where(Lease.item_id == item_id, Lease.annotator_id != user.id, Lease.expires_at > now)
        ).scalar_one()
        state = conn.execute(select(ItemState.outcome, ItemState.available).where(ItemState.item_id == item_id)).first()
        if held:
            why = "another annotator holds it"
        elif state is not None and state.outcome != "pending":
            why = f"it needs no more decisions (outcome: {state.outcome})"
        elif state is not None and not state.available:
            why = "it is not open for review (its edit has not been accepted)"
        else:
            why = f"it is not leased to anyone (leases end {self.lease_seconds / 60:.0f} min after an annotator's last request)"
        return LeaseLost(f"item {item_id} is not leased to {user.name!r}: {why}; take the next item")

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
                reasons_json=dumps(reasons),
                note=note or None,
                before_json=dumps(before) if before else None,
                after_json=dumps({"verdict": verdict, "reasons": reasons, "note": note}),
                source_ref=source_ref,
            )
        )
        return int(result.inserted_primary_key[0])

    def import_decision(
        self, user: Account, item_id: str, verdict: str, reasons: list[str], note: str, source_ref: str,
        question_updates: dict[str, dict[str, Any]] | None = None,
    ) -> int | None:
        """Record a decision made in another tool (Label Studio), with its question edits,
        without a lease; idempotent by ``source_ref``. Returns the event id, or None when that
        decision was imported before."""
        reasons = check_verdict(verdict, reasons, note)

        def run(conn: Connection) -> int | None:
            if conn.execute(select(Event.id).where(Event.source_ref == source_ref)).first() is not None:
                return None
            state = conn.execute(
                select(Item.id, Item.stage, Item.payload_json, ItemState.outcome).outerjoin(ItemState, ItemState.item_id == Item.id).where(Item.id == item_id)
            ).first()
            if state is None:
                raise UnknownItem(f"no review item {item_id!r}")
            if state.outcome == RETIRED:
                raise _retired_refusal(item_id)
            new_events = _question_update_events(conn, state, question_updates or {})
            now = self.clock()
            mine = self._my_decision(conn, item_id, user.id)
            event_id = self._record_decision(conn, user, item_id, now, verdict, reasons, note, mine, source_ref)
            for ev in new_events:
                conn.execute(insert(Event).values(item_id=item_id, annotator_id=user.id, created_at=now, **ev))
            conn.execute(delete(Lease).where(Lease.item_id == item_id, Lease.annotator_id == user.id))
            self._resolve(conn, item_id, user.id, now)
            return event_id

        return self._retry(run)  # type: ignore[attr-defined]

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
        return my_decision(row)

    # -- resolving ---------------------------------------------------------------------
    def _resolve(self, conn: Connection, item_id: str, actor: int, now: float, retired: bool | None = None) -> None:
        """Append a resolution event when the derived outcome (or decision count) changed, and
        mirror it in the item-state cache in the same transaction. ``retired`` None keeps the
        item's retirement as it is."""
        # Lock the item's state row first (PostgreSQL): two annotators deciding the same item at
        # once are counted one after the other, each seeing the other's committed decision.
        state_q = select(ItemState.outcome, ItemState.n).where(ItemState.item_id == item_id)
        state = conn.execute(state_q if self._sqlite else state_q.with_for_update()).first()
        events = conn.execute(
            select(Event.id, Event.item_id, Event.annotator_id, Event.kind, Event.verdict)
            .where(Event.item_id == item_id, Event.kind.in_(("decision", "retract", "adjudication")))
            .order_by(Event.id)
        ).all()
        current = current_decisions(events).get(item_id, {})
        adj = latest_by_item(events, "adjudication").get(item_id)
        before = (state.outcome, state.n) if state is not None else self._resolution(conn, item_id)
        if retired is None:
            retired = before[0] == RETIRED
        outcome = item_outcome((e.verdict for e in current.values()), self.k, adj.verdict if adj else None, retired=retired)
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
                after_json=dumps({"outcome": outcome, "decisions": len(current), "adjudicated": adj is not None}),
            )
        )
        self._set_state(conn, item_id, outcome, len(current), int(res.inserted_primary_key[0]), was_accepted=before[0] == "accept")

    def _resolution(self, conn: Connection, item_id: str) -> tuple[str, int]:
        row = conn.execute(
            select(Event.verdict, Event.n).where(Event.item_id == item_id, Event.kind == "resolution").order_by(Event.id.desc()).limit(1)
        ).first()
        return (row.verdict, row.n or 0) if row else ("pending", 0)

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

    # -- undo, adjudication --------------------------------------------------------------
    def retract_last(self, user: Account, stage: str) -> str | None:
        """Undo: withdraw the user's latest decision in ``stage`` and lease the item back to
        them. Returns the item id, or None when there is nothing to undo."""
        check_stage(stage)
        return self._retry(lambda conn: self._retract_last(conn, user, stage))  # type: ignore[attr-defined]

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
        if conn.execute(select(ItemState.outcome).where(ItemState.item_id == row.item_id)).scalar_one_or_none() == RETIRED:
            raise _retired_refusal(row.item_id)
        conn.execute(insert(Event).values(item_id=row.item_id, annotator_id=user.id, created_at=now, kind="retract", before_json=dumps(mine), after_json=None))
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
        return bool(conn.execute(select(func.count()).select_from(Event).where(Event.item_id == item_id, Event.kind == "adjudication")).scalar_one())

    def adjudicate(self, admin: Account, item_id: str, verdict: str, note: str = "") -> int:
        """An admin settles a disputed item; the adjudication overrides the annotators."""
        if not admin.is_admin:
            raise NotAllowed("only admins adjudicate")
        check_verdict(verdict, [], note, need_reason=False)

        def run(conn: Connection) -> int:
            now = self.clock()
            if conn.execute(select(Item.id).where(Item.id == item_id)).first() is None:
                raise UnknownItem(f"no review item {item_id!r}")
            before, _ = self._resolution(conn, item_id)
            if before == RETIRED:
                raise _retired_refusal(item_id)
            res = conn.execute(
                insert(Event).values(
                    item_id=item_id,
                    annotator_id=admin.id,
                    created_at=now,
                    kind="adjudication",
                    verdict=verdict,
                    note=note or None,
                    before_json=dumps({"outcome": before}),
                    after_json=dumps({"verdict": verdict, "note": note}),
                )
            )
            self._resolve(conn, item_id, admin.id, now)
            return int(res.inserted_primary_key[0])

        return self._retry(run)  # type: ignore[attr-defined]

    # -- retirement (the review stage's reconciliation with qa/questions) -----------------
    def _set_retired(self, conn: Connection, item_id: str, actor: int, now: float, retired: bool, why: str) -> None:
        """Retire an item (its content left qa/questions) or bring a retired one back: a
        ``retire`` / ``restore`` event, then the resolution follows. Nothing is deleted."""
        conn.execute(
            insert(Event).values(
                item_id=item_id, annotator_id=actor, created_at=now, kind="retire" if retired else "restore", note=why, after_json=dumps({"reason": why})
            )
        )
        if retired:
            conn.execute(delete(Lease).where(Lease.item_id == item_id))
        self._resolve(conn, item_id, actor, now, retired=retired)

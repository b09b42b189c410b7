"""Deciding: decisions, undo, adjudication and retirement, each appended as events.

After every change the item's outcome is recomputed with :func:`rules.item_outcome` from the
current decisions (:func:`rules.current_decisions`); when it changed a ``resolution`` event
is appended and mirrored in ``review_item_state`` in the same transaction. The item-state row
is locked (PostgreSQL ``FOR UPDATE``; on SQLite every writer is alone) before the item's
decisions are counted, so two annotators deciding one item at once are counted one after the
other.

``decide`` runs on every annotator request, so it is plain SQL (:class:`storage.review_db.Sql`)
and, on PostgreSQL, three statements between ``BEGIN`` and ``COMMIT``: lock the state row,
release the user's lease and read the item with the user's latest decision (one statement);
read the item's decisions, only when it has some already (a state row saying "pending, 0
decisions" says there are none); append the events and update the state cache (one
statement). On SQLite the same steps are separate statements (no round trips there).
"""

from __future__ import annotations

import json
from collections import namedtuple
from collections.abc import Callable
from typing import Any

from storage.review_db import Sql
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
from tasks.review.views import my_decision, question_events

_PARENT_OK_SQL = (
    "CASE WHEN review_item_state.parent_id IS NULL OR EXISTS (SELECT 1 FROM review_item_state p "
    "WHERE p.item_id = review_item_state.parent_id AND p.outcome = 'accept') THEN 1 ELSE 0 END"
)
EVENT_COLUMNS = (
    "item_id",
    "annotator_id",
    "created_at",
    "kind",
    "verdict",
    "n",
    "reasons_json",
    "note",
    "question_id",
    "before_json",
    "after_json",
    "source_ref",
)
_LATEST_MINE = (
    "LEFT JOIN review_events e ON e.id = (SELECT max(d.id) FROM review_events d "
    "WHERE d.item_id = i.id AND d.kind IN ('decision', 'retract') AND d.annotator_id = :me)"
)
# PostgreSQL, one statement: lock the item's state row, then release the user's lease on it (the
# DELETE waits for the lock: its condition reads the locked row), and read the item with the
# user's latest decision/retract event.
_DECIDE_PG_SQL = f"""
WITH st AS (SELECT item_id, outcome, n FROM review_item_state WHERE item_id = :item_id FOR UPDATE),
released AS (DELETE FROM review_leases WHERE item_id = (SELECT item_id FROM st) AND annotator_id = :me RETURNING slot)
SELECT i.id, i.stage, i.payload_json, st.outcome, st.n, (SELECT count(*) FROM released),
       e.id, e.kind, e.verdict, e.reasons_json, e.note
FROM review_items i JOIN st ON st.item_id = i.id
{_LATEST_MINE}
WHERE i.id = :item_id
"""
# SQLite (the writer is alone): the same read, the lease released by its own statement.
_DECIDE_SQLITE_SQL = f"""
SELECT i.id, i.stage, i.payload_json, s.outcome, s.n, 0, e.id, e.kind, e.verdict, e.reasons_json, e.note
FROM review_items i JOIN review_item_state s ON s.item_id = i.id
{_LATEST_MINE}
WHERE i.id = :item_id
"""
_DecideRow = namedtuple(
    "_DecideRow", "id stage payload_json outcome n released ev_id ev_kind ev_verdict ev_reasons_json ev_note"
)
_FOLD_SQL = (
    "SELECT id, item_id, annotator_id, kind, verdict FROM review_events "
    "WHERE item_id = :item_id AND kind IN ('decision', 'retract', 'adjudication') ORDER BY id"
)
_Ev = namedtuple("_Ev", "id item_id annotator_id kind verdict")
_LOCK_SQL = "SELECT outcome, n FROM review_item_state WHERE item_id = :item_id"
_LATEST_RESOLUTION_SQL = (
    "SELECT verdict, n FROM review_events WHERE item_id = :item_id AND kind = 'resolution' ORDER BY id DESC LIMIT 1"
)


def dumps(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _retired_refusal(item_id: str) -> NotAllowed:
    return NotAllowed(
        f"item {item_id} was retired (its edit or questions are no longer in qa/questions); take the next item"
    )


def _question_update_events(
    sql: Sql, item_id: str, stage: str, payload_json: str, question_updates: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """The question events of a decision's inline edits; raises :class:`QuestionError` before
    anything is written."""
    if not question_updates:
        return []
    if stage != "qa":
        raise QueueError(f"item {item_id} is an edit-verification item; questions are edited at QA review")
    payload = json.loads(payload_json)
    current = {q["id"]: q for q in question_state(payload.get("questions", []), question_events(sql, item_id))}
    new_events: list[dict[str, Any]] = []
    for qid, upd in sorted(question_updates.items()):
        if qid not in current:
            raise QuestionError(qid, "id", f"question {qid!r} does not belong to item {item_id}")
        new_events.extend(apply_question_update(current[qid], upd))
    return new_events


def _decision_event(
    user: Account, verdict: str, reasons: list[str], note: str, before: dict[str, Any] | None, source_ref: str | None
) -> dict[str, Any]:
    """One decision event (with the annotator's previous decision as ``before``)."""
    return {
        "annotator_id": user.id,
        "kind": "decision",
        "verdict": verdict,
        "reasons_json": dumps(reasons),
        "note": note or None,
        "before_json": dumps(before) if before else None,
        "after_json": dumps({"verdict": verdict, "reasons": reasons, "note": note}),
        "source_ref": source_ref,
    }


def _imported_account(sql: Sql, name: str, now: float) -> Account:
    """The account named ``name``, created (an annotator without a login secret) when missing."""
    if not name or len(name) > 200 or any(c in name for c in "\r\n\t"):
        raise QueueError(f"annotator name must be 1-200 printable characters, got {name!r}")
    query = "SELECT id, name, role FROM review_users WHERE name = :name"
    row = sql.row(query, {"name": name})
    if row is None:
        sql.run(
            "INSERT INTO review_users (name, role, secret_hash, created_at) VALUES (:name, 'annotator', NULL, :now) ON CONFLICT (name) DO NOTHING",
            {"name": name, "now": now},
        )
        row = sql.row(query, {"name": name})
    return Account(row[0], row[1], row[2])


def _insert_sql(count: int) -> str:
    """``INSERT`` of ``count`` events returning (id, kind): parameters ``<column><row>``."""
    rows = ", ".join("(" + ", ".join(f":{c}{j}" for c in EVENT_COLUMNS) + ")" for j in range(count))
    return f"INSERT INTO review_events ({', '.join(EVENT_COLUMNS)}) VALUES {rows} RETURNING id, kind"


class DecisionsMixin:
    """The write side of ``ReviewQueue`` (besides leasing and filling)."""

    k: int
    lease_seconds: float
    clock: Callable[[], float]

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
        return self._run(
            lambda sql: self._decide(sql, user, item_id, verdict, reasons, note, question_updates or {}, source_ref)
        )  # type: ignore[attr-defined]

    def _decide(
        self,
        sql: Sql,
        user: Account,
        item_id: str,
        verdict: str,
        reasons: list[str],
        note: str,
        question_updates: dict[str, dict[str, Any]],
        source_ref: str | None,
    ) -> int:
        now = self.clock()
        params = {"item_id": item_id, "me": user.id}
        if sql.postgres:
            found = sql.row(_DECIDE_PG_SQL, params)  # state locked, lease released, item and my latest decision
            released = bool(found and found[5])
        else:
            found = sql.row(_DECIDE_SQLITE_SQL, params)
            released = bool(found) and bool(
                sql.rows(
                    "DELETE FROM review_leases WHERE item_id = :item_id AND annotator_id = :me RETURNING slot", params
                )
            )
        if found is None:
            raise UnknownItem(f"no review item {item_id!r}")
        item = _DecideRow._make(found)
        if item.outcome == RETIRED:
            raise _retired_refusal(item_id)
        mine = my_decision(item)
        if not released and mine is None:  # no lease (never had one, or taken over), no decision to change
            raise self._not_leased(sql, item_id, user, now)
        new_events = [_decision_event(user, verdict, reasons, note, mine, source_ref)]
        new_events += [
            dict(ev, annotator_id=user.id)
            for ev in _question_update_events(sql, item_id, item.stage, item.payload_json, question_updates)
        ]
        return self._append(sql, item_id, user.id, now, new_events, before=(item.outcome, item.n))[0]

    def _not_leased(self, sql: Sql, item_id: str, user: Account, now: float) -> LeaseLost:
        """Why ``user`` may not decide ``item_id``, told as it is now: another annotator holds
        it, it needs no more decisions, or nobody leased it to the user (a lease ends
        ``lease_seconds`` after the user's last request)."""
        held = sql.row(
            "SELECT count(*) FROM review_leases WHERE item_id = :item_id AND annotator_id != :me AND expires_at > :now",
            {"item_id": item_id, "me": user.id, "now": now},
        )[0]  # type: ignore[index]
        state = sql.row(
            "SELECT outcome, available FROM review_item_state WHERE item_id = :item_id", {"item_id": item_id}
        )
        if held:
            why = "another annotator holds it"
        elif state is not None and state[0] != "pending":
            why = f"it needs no more decisions (outcome: {state[0]})"
        elif state is not None and not state[1]:
            why = "it is not open for review (its edit has not been accepted)"
        else:
            why = f"it is not leased to anyone (leases end {self.lease_seconds / 60:.0f} min after an annotator's last request)"
        return LeaseLost(f"item {item_id} is not leased to {user.name!r}: {why}; take the next item")

    def import_decision(
        self,
        user: Account | str,
        item_id: str,
        verdict: str,
        reasons: list[str],
        note: str,
        source_ref: str,
        question_updates: dict[str, dict[str, Any]] | None = None,
    ) -> int | None:
        """Record a decision made in another tool (Label Studio), with its question edits,
        without a lease; idempotent by ``source_ref``. Returns the event id, or None when that
        decision was imported before. ``user`` by name: an annotator account without a login,
        created in the decision's own transaction, so a decision imported before (or refused)
        creates no account that holds no decision."""
        reasons = check_verdict(verdict, reasons, note)

        def run(sql: Sql) -> int | None:
            if sql.row("SELECT id FROM review_events WHERE source_ref = :ref", {"ref": source_ref}) is not None:
                return None
            item = sql.row(
                "SELECT i.stage, i.payload_json, s.outcome FROM review_items i LEFT JOIN review_item_state s ON s.item_id = i.id WHERE i.id = :item_id",
                {"item_id": item_id},
            )
            if item is None:
                raise UnknownItem(f"no review item {item_id!r}")
            if item[2] == RETIRED:
                raise _retired_refusal(item_id)
            question_events_ = _question_update_events(sql, item_id, item[0], item[1], question_updates or {})
            account = user if isinstance(user, Account) else _imported_account(sql, user, self.clock())
            before = self._lock_state(sql, item_id)
            mine = self._my_decision(sql, item_id, account.id)
            sql.run(
                "DELETE FROM review_leases WHERE item_id = :item_id AND annotator_id = :me",
                {"item_id": item_id, "me": account.id},
            )
            new_events = [_decision_event(account, verdict, reasons, note, mine, source_ref)] + [
                dict(ev, annotator_id=account.id) for ev in question_events_
            ]
            return self._append(sql, item_id, account.id, self.clock(), new_events, before=before)[0]

        return self._run(run)  # type: ignore[attr-defined]

    @staticmethod
    def _my_decision(sql: Sql, item_id: str, user_id: int) -> dict[str, Any] | None:
        row = sql.row(
            "SELECT id, kind, verdict, reasons_json, note FROM review_events "
            "WHERE item_id = :item_id AND kind IN ('decision', 'retract') AND annotator_id = :me ORDER BY id DESC LIMIT 1",
            {"item_id": item_id, "me": user_id},
        )
        return my_decision(_DecideRow(None, None, None, None, None, None, *row)) if row else None

    # -- resolving ---------------------------------------------------------------------
    @staticmethod
    def _lock_state(sql: Sql, item_id: str) -> tuple[str, int]:
        """The item's (outcome, decisions) from its state row, locked on PostgreSQL: two
        transactions changing one item's decisions are counted one after the other."""
        row = sql.row(_LOCK_SQL + (" FOR UPDATE" if sql.postgres else ""), {"item_id": item_id})
        if row is not None:
            return row[0], row[1]
        latest = sql.row(_LATEST_RESOLUTION_SQL, {"item_id": item_id})
        return (latest[0], latest[1] or 0) if latest else ("pending", 0)

    def _append(
        self,
        sql: Sql,
        item_id: str,
        actor: int,
        now: float,
        new_events: list[dict[str, Any]],
        before: tuple[str, int] | None = None,
        retired: bool | None = None,
    ) -> list[int]:
        """Append ``new_events`` (event columns; ``annotator_id`` and ``kind`` at least) to the
        item's log and, when its outcome or number of current decisions changed, a resolution
        event mirrored in the state cache, in the same transaction. ``before``: the item's
        (outcome, decisions) read from its locked state row (read and locked here when None).
        ``retired`` None keeps the item's retirement as it is. Returns the ids of ``new_events``."""
        if before is None:
            before = self._lock_state(sql, item_id)
        if retired is None:
            retired = before[0] == RETIRED
        kinds = {e["kind"] for e in new_events}
        deciders = {e["annotator_id"] for e in new_events if e["kind"] == "decision"}
        if before == ("pending", 0) and not retired and not kinds & {"retract", "adjudication"} and len(deciders) <= 1:
            # no current decision and no adjudication yet (the locked state row says so): the
            # new decision, if any, is the only one; nothing to read
            verdicts = [e["verdict"] for e in new_events if e["kind"] == "decision"][-1:]
            adjudication = None
        else:
            log = [_Ev._make(r) for r in sql.rows(_FOLD_SQL, {"item_id": item_id})]
            log += [_Ev(None, item_id, e["annotator_id"], e["kind"], e.get("verdict")) for e in new_events]
            verdicts = [e.verdict for e in current_decisions(log).get(item_id, {}).values()]
            adj = latest_by_item(log, "adjudication").get(item_id)
            adjudication = adj.verdict if adj else None
        outcome = item_outcome(verdicts, self.k, adjudication, retired=retired)
        rows = [dict(e, item_id=item_id, created_at=now) for e in new_events]
        resolved = (outcome, len(verdicts)) != before
        if resolved:
            rows.append(
                {
                    "item_id": item_id,
                    "annotator_id": actor,
                    "created_at": now,
                    "kind": "resolution",
                    "verdict": outcome,
                    "n": len(verdicts),
                    "after_json": dumps(
                        {"outcome": outcome, "decisions": len(verdicts), "adjudicated": adjudication is not None}
                    ),
                }
            )
        if not rows:
            return []
        params: dict[str, Any] = {"item_id": item_id, "outcome": outcome, "n": len(verdicts)}
        for j, r in enumerate(rows):
            params.update({f"{c}{j}": r.get(c) for c in EVENT_COLUMNS})
        insert = _insert_sql(len(rows))
        # the state row: SET sees the old row, so availability is decided on the new outcome here;
        # when the item's acceptance changed, the QA items waiting for it open or close
        available = _PARENT_OK_SQL if outcome == "pending" else "0"
        set_state = f"UPDATE review_item_state SET outcome = :outcome, n = :n, resolution_id = {{rid}}, available = {available} WHERE item_id = :item_id"
        children = None
        if resolved and (before[0] == "accept") != (outcome == "accept"):
            flag = "CASE WHEN outcome = 'pending' THEN 1 ELSE 0 END" if outcome == "accept" else "0"
            children = f"UPDATE review_item_state SET available = {flag} WHERE parent_id = :item_id"
        if sql.postgres:  # one statement (one round trip): the events, the state row, the QA items
            parts = [f"ev AS ({insert})"]
            if resolved:
                parts.append("st AS (" + set_state.format(rid="(SELECT id FROM ev WHERE kind = 'resolution')") + ")")
            if children:
                parts.append(f"ch AS ({children})")
            returned = sql.rows(f"WITH {', '.join(parts)} SELECT id, kind FROM ev", params)
        else:
            returned = sql.rows(insert, params)
            if resolved:
                params["rid"] = max(i for i, kind in returned if kind == "resolution")
                sql.run(set_state.format(rid=":rid"), params)
            if children:
                sql.run(children, params)
        ids = sorted(int(i) for i, _ in returned)
        return ids[: len(new_events)]

    # -- undo, adjudication --------------------------------------------------------------
    def retract_last(self, user: Account, stage: str) -> str | None:
        """Undo: withdraw the user's latest decision in ``stage`` and lease the item back to
        them. Returns the item id, or None when there is nothing to undo."""
        check_stage(stage)
        return self._run(lambda sql: self._retract_last(sql, user, stage))  # type: ignore[attr-defined]

    def _retract_last(self, sql: Sql, user: Account, stage: str) -> str | None:
        now = self.clock()
        row = sql.row(
            "SELECT e.item_id FROM review_events e JOIN review_items i ON i.id = e.item_id "
            "WHERE e.annotator_id = :me AND e.kind IN ('decision', 'retract') AND i.stage = :stage ORDER BY e.id DESC LIMIT 1",
            {"me": user.id, "stage": stage},
        )
        if row is None:
            return None
        item_id = row[0]
        mine = self._my_decision(sql, item_id, user.id)
        if mine is None:
            return None  # the latest action already was an undo
        if sql.row(
            "SELECT count(*) FROM review_events WHERE item_id = :item_id AND kind = 'adjudication'",
            {"item_id": item_id},
        )[0]:  # type: ignore[index]
            raise NotAllowed(f"item {item_id} was adjudicated; its decisions can no longer be undone")
        before = self._lock_state(sql, item_id)
        if before[0] == RETIRED:
            raise _retired_refusal(item_id)
        p = {"item_id": item_id, "me": user.id, "now": now}
        sql.run("DELETE FROM review_leases WHERE item_id = :item_id AND expires_at <= :now", p)
        free = sorted(
            set(range(self.k)) - set(sql.scalars("SELECT slot FROM review_leases WHERE item_id = :item_id", p))
        )
        if free:  # leased_at before the user's other leases, so the undone item is shown first
            first = sql.row("SELECT min(leased_at) FROM review_leases WHERE annotator_id = :me", p)[0]  # type: ignore[index]
            sql.run(
                "INSERT INTO review_leases (item_id, slot, annotator_id, stage, leased_at, expires_at) VALUES (:item_id, :slot, :me, :stage, :leased_at, :expires_at)",
                {
                    **p,
                    "slot": free[0],
                    "stage": stage,
                    "leased_at": min(now, (first or now) - 1.0),
                    "expires_at": now + self.lease_seconds,
                },
            )
        self._append(
            sql,
            item_id,
            user.id,
            now,
            [{"annotator_id": user.id, "kind": "retract", "before_json": dumps(mine)}],
            before=before,
        )
        return item_id

    def adjudicate(self, admin: Account, item_id: str, verdict: str, note: str = "") -> int:
        """An admin settles a disputed item; the adjudication overrides the annotators."""
        if not admin.is_admin:
            raise NotAllowed("only admins adjudicate")
        check_verdict(verdict, [], note, need_reason=False)

        def run(sql: Sql) -> int:
            now = self.clock()
            if sql.row("SELECT id FROM review_items WHERE id = :item_id", {"item_id": item_id}) is None:
                raise UnknownItem(f"no review item {item_id!r}")
            before = self._lock_state(sql, item_id)
            if before[0] == RETIRED:
                raise _retired_refusal(item_id)
            event = {
                "annotator_id": admin.id,
                "kind": "adjudication",
                "verdict": verdict,
                "note": note or None,
                "before_json": dumps({"outcome": before[0]}),
                "after_json": dumps({"verdict": verdict, "note": note}),
            }
            return self._append(sql, item_id, admin.id, now, [event], before=before)[0]

        return self._run(run)  # type: ignore[attr-defined]

    # -- retirement (the review stage's reconciliation with qa/questions) -----------------
    def _set_retired(self, sql: Sql, item_id: str, actor: int, now: float, retired: bool, why: str) -> None:
        """Retire an item (its content left qa/questions) or bring a retired one back: a
        ``retire`` / ``restore`` event, then the resolution follows. Nothing is deleted."""
        before = self._lock_state(sql, item_id)
        if retired:
            sql.run("DELETE FROM review_leases WHERE item_id = :item_id", {"item_id": item_id})
        event = {
            "annotator_id": actor,
            "kind": "retire" if retired else "restore",
            "note": why,
            "after_json": dumps({"reason": why}),
        }
        self._append(sql, item_id, actor, now, [event], before=before, retired=retired)

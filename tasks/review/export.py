"""``reactbench review export``: verified Parquet and the decision log, from the queue's events.

The three artifacts are one set sealed by ``review/export_manifest.json`` (readers check it
with :func:`tasks.review.export_set.require_export_set`). An edit is verified when its verification item resolved as accepted and its QA-review item
resolved as accepted too. Its questions are exported with the inline edits applied, minus
those marked invalid. Annotators appear as ``annotator_001``... (numbered by account
creation), never by name. Same database -> byte-identical files.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from storage import addresses
from storage.fs import RunFS
from storage.hashing import canonical_json
from storage.parquet_io import table_from_rows
from tasks.engine.intact import require_intact
from tasks.review.export_set import MANIFEST, write_export_set
from tasks.review.queue import SYSTEM_USER, ReviewQueue
from tasks.review.rules import RETIRED, current_decisions, latest_by_item
from tasks.review.stage import is_unedited
from tasks.review.validation import question_state


@dataclass
class ExportSummary:
    decisions: int = 0
    verified_edits: int = 0
    verified_questions: int = 0
    dropped_questions: int = 0
    pending_edits: int = 0
    paths: dict[str, str] = field(default_factory=dict)
    message: str = ""
    position: int = 0


def pseudonyms(queue: ReviewQueue) -> dict[int, str]:
    """Account id -> release-safe pseudonym (creation order, so stable for one database).
    The review stage's own account (retire / restore events) keeps its name."""
    users = queue.users()
    people = [uid for uid in sorted(users) if users[uid].name != SYSTEM_USER]
    names = {uid: f"annotator_{i:03d}" for i, uid in enumerate(people, start=1)}
    names.update({uid: "system" for uid in users if users[uid].name == SYSTEM_USER})
    return names


def iso(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts, _dt.UTC).isoformat(timespec="milliseconds")


def export_review(run: RunFS, queue: ReviewQueue) -> ExportSummary:
    """Write ``review/verified_edits``, ``review/verified_questions`` and ``review/decisions`` as
    one set (see :mod:`tasks.review.export_set`) reflecting the decision log up to its newest
    event when the export started; decisions made meanwhile go into the next export."""
    require_intact(run, ("edit", "qa"))  # its rows are published as verified: never a changed file's
    position = queue.log_position()
    names = pseudonyms(queue)
    items = {r.id: r for r in queue.items()}
    events = [e for e in queue.events(upto=position) if e.item_id in items]
    res = {i: e.verdict for i, e in latest_by_item(events, "resolution").items()}
    live = {(it.stage, it.edit_id): i for i, it in items.items() if res.get(i) != RETIRED}

    decisions = _decision_rows(events, items, names)
    current = current_decisions(events)  # item -> annotator -> decision event
    adjudicated = latest_by_item(events, "adjudication")
    q_events: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in events:
        if e.kind in ("question_edit", "question_validity"):
            q_events[e.item_id].append(
                {"kind": e.kind, "question_id": e.question_id, "after": json.loads(e.after_json)}
            )

    edits = addresses.EDITS.reader(run).rows()
    questions = addresses.QUESTIONS.reader(run).rows()
    by_edit: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for q in questions:
        by_edit[q["edit_id"]].append(q)

    summary = ExportSummary(decisions=len(decisions))
    v_edits: list[dict[str, Any]] = []
    v_questions: list[dict[str, Any]] = []
    for edit in sorted(edits, key=lambda r: r["id"]):
        e_item, q_item = live.get(("edit", edit["id"])), live.get(("qa", edit["id"]))
        unedited = is_unedited(edit)
        if (q_item if unedited else e_item) is None:
            continue
        e_out = "accept" if unedited else res.get(e_item, "pending")
        q_out = res.get(q_item, "pending") if q_item else "pending"
        if e_out != "accept" or q_out != "accept":
            summary.pending_edits += e_out not in ("accept", "reject") or (
                e_out == "accept" and q_out not in ("accept", "reject")
            )
            continue
        trail = {
            stage: {
                "outcome": outcome,
                "adjudicated": it in adjudicated,
                "decisions": sorted(
                    (
                        {
                            "annotator": names[e.annotator_id],
                            "verdict": e.verdict,
                            "reasons": json.loads(e.reasons_json or "[]"),
                        }
                        for e in current.get(it, {}).values()
                    ),
                    key=lambda d: d["annotator"],
                ),
            }
            for stage, it, outcome in (("edit", e_item, e_out), ("qa", q_item, q_out))
            if not (unedited and stage == "edit")
        }
        v_edits.append({**edit, "decisions_json": canonical_json(trail)})
        state = question_state(by_edit[edit["id"]], q_events.get(q_item, []))
        for q in sorted(state, key=lambda q: q["id"]):
            if not q["valid"]:
                summary.dropped_questions += 1
                continue
            row = {k: v for k, v in q.items() if k not in ("valid", "edited")}
            if row.get("qtype") != "MC" and not row.get("options"):
                row["options"] = None
            v_questions.append(row)
    summary.verified_edits, summary.verified_questions = len(v_edits), len(v_questions)

    tables = {
        address.name: table_from_rows(address.schema, rows, where=address.folder)
        for address, rows in (
            (addresses.VERIFIED_EDITS, v_edits),
            (addresses.VERIFIED_QUESTIONS, v_questions),
            (addresses.DECISIONS, decisions),
        )
    }
    manifest = write_export_set(run, tables, position)
    summary.paths = {name: run.path(entry["path"]) for name, entry in manifest["files"].items()}
    summary.paths["manifest"] = run.path(MANIFEST)
    summary.position = position
    if not decisions:
        summary.message = (
            f"no review decisions yet in {queue.engine.url.render_as_string(hide_password=True)}: wrote empty "
            "verified_edits, verified_questions and decisions; review with `reactbench review serve` first"
        )
    else:
        summary.message = (
            f"{summary.decisions} events -> {summary.verified_edits} verified edits, {summary.verified_questions} verified "
            f"questions ({summary.dropped_questions} marked invalid, {summary.pending_edits} edits still in review); "
            f"decision log up to event {position}"
        )
    return summary


def _decision_rows(events: list[Any], items: dict[str, Any], names: dict[int, str]) -> list[dict[str, Any]]:
    """The audit log for release: every human event and the review stage's retire / restore
    events (resolutions are derived, so left out)."""
    rows = []
    for e in events:
        if e.kind == "resolution":
            continue
        item = items[e.item_id]
        if e.kind.startswith("question_"):
            kind, target = "question", e.question_id
            action = (
                e.kind
                if e.kind == "question_edit"
                else ("question_valid" if json.loads(e.after_json)["valid"] else "question_invalid")
            )
        else:
            kind, target = item.stage, item.edit_id
            action = (
                e.verdict
                if e.kind == "decision"
                else (f"adjudicate_{e.verdict}" if e.kind == "adjudication" else e.kind)
            )
        rows.append(
            {
                "event_id": int(e.id),
                "item_id": target,
                "item_kind": kind,
                "action": action,
                "annotator": names[e.annotator_id],
                "created_at": iso(e.created_at),
                "before_json": e.before_json,
                "after_json": e.after_json,
            }
        )
    return rows

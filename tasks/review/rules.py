"""The review domain's rules as pure functions: no database, no clock.

One place says what an annotator's current decision is (their latest ``decision`` unless a
later ``retract`` withdrew it) and how an item's outcome follows from the current decisions,
an adjudication and retirement. The queue (when it appends a resolution event), the web app
(adjudication pages), the export and the dashboard all call these, so they cannot disagree.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

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
RETIRED = "retired"  # outcome of an item whose content left qa/questions (kept in the log)
DECISION_KINDS: tuple[str, ...] = ("decision", "retract")

E = TypeVar("E")


class QueueError(Exception):
    """A request the queue refuses; the message says why."""


class UnknownItem(QueueError):
    pass


class NotAllowed(QueueError):
    pass


class LeaseLost(QueueError):
    """The user holds no lease on the item (never had one, it expired, or another annotator
    holds it; the message says which): the decision was not recorded."""


@dataclass(frozen=True)
class Account:
    id: int
    name: str
    role: str

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


def current_decisions(events: Iterable[E]) -> dict[str, dict[int, E]]:
    """THE decisions fold: ``{item_id: {annotator_id: decision event}}`` from events in log order.

    An annotator's current decision on an item is their latest ``decision`` event unless a
    later ``retract`` withdrew it. Events of other kinds are ignored; each event needs
    ``kind``, ``item_id`` and ``annotator_id`` attributes."""
    out: dict[str, dict[int, E]] = {}
    for e in events:
        kind = e.kind
        if kind not in DECISION_KINDS:
            continue
        mine = out.setdefault(e.item_id, {})
        if kind == "decision":
            mine[e.annotator_id] = e
        else:
            mine.pop(e.annotator_id, None)
    return {item: decs for item, decs in out.items() if decs}


def latest_decision(latest: Any) -> E | None:
    """An annotator's current decision from their single latest decision/retract event (the fold
    above applied to one annotator: a retract as latest event means no decision)."""
    if latest is None or getattr(latest, "kind", None) != "decision":
        return None
    return latest


def item_outcome(verdicts: Iterable[str], k: int, adjudication: str | None = None, retired: bool = False) -> str:
    """The outcome of an item: ``retired`` wins, then an admin's adjudication; with at least
    ``k`` current decisions a unanimous verdict, else ``disputed``; fewer is ``pending``."""
    if retired:
        return RETIRED
    if adjudication:
        return adjudication
    verdicts = list(verdicts)
    if len(verdicts) < k:
        return "pending"
    distinct = set(verdicts)
    return distinct.pop() if len(distinct) == 1 else "disputed"


def latest_by_item(events: Iterable[E], kind: str) -> dict[str, E]:
    """The latest event of one kind per item (adjudications, resolutions), from events in log order."""
    out: dict[str, E] = {}
    for e in events:
        if e.kind == kind:
            out[e.item_id] = e
    return out


def decision_dict(event: Any) -> dict[str, Any]:
    """A decision event as pages and the export show it."""
    return {
        "event_id": int(event.id),
        "verdict": event.verdict,
        "reasons": json.loads(event.reasons_json or "[]"),
        "note": event.note or "",
    }


def check_stage(stage: str) -> None:
    if stage not in STAGES:
        raise QueueError(f"unknown review stage {stage!r}; stages: {', '.join(STAGES)}")


def check_verdict(verdict: str, reasons: list[str], note: str, need_reason: bool = True) -> list[str]:
    """Validate a verdict with its reason codes and note; returns the codes deduplicated, in
    the canonical order."""
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


def names_of(users: Mapping[int, Account], uid: int) -> str:
    return users[uid].name if uid in users else str(uid)

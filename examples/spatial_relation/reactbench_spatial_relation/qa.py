"""Question slots of the task: from the instruction's plan and the editor's record.

The gold answers rest on one fact, the relation that holds after the move. It is recomputed
here from where the editor actually put the object (``qc_json.editor_meta.destination_box``)
and the other object's box, with the same geometry the miner used, and must agree with the
plan; an edit that went elsewhere yields no questions (a ``sr_moved_elsewhere`` problem).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reactbench_spatial_relation import geometry

TEMPLATE = Path(__file__).resolve().parent / "templates" / "spatial_relation.yaml"

# Opposites first: the most tempting wrong side of each relation after a move.
_OPPOSITE = {"left of": "right of", "right of": "left of", "above": "below", "below": "above"}


def others(relation: str, now: str) -> tuple[str, str]:
    """Two relations that are neither the usual one nor the one that now holds: the opposite
    side of ``now`` first, then the first remaining side."""
    picks = [_OPPOSITE[now]] + [r for r in ("left of", "right of", "above", "below") if r != now]
    picks = [r for r in dict.fromkeys(picks) if r not in (relation, now)]
    return picks[0], picks[1]


def habit(subject: str, relation: str, obj: str) -> str:
    """A sentence stating the usual arrangement, as a question's lead-in."""
    return f"In most pictures, a {subject} is {geometry.phrase(relation)} the {obj}."


def moved_to(edit: Mapping[str, Any], fields: Mapping[str, Any]) -> list[float]:
    """Where the object went: the editor's record, else the plan."""
    meta = (json.loads(edit.get("qc_json") or "{}").get("editor_meta") or {}) if edit.get("qc_json") else {}
    return list(meta.get("destination_box") or fields["destination_box"])


def slots(edit: Mapping[str, Any], fields: Mapping[str, Any]) -> dict[str, str]:
    """The template slots of one edit (raises ValueError when the move is not the planned one)."""
    relation, planned = fields["relation"], fields["new_relation"]
    dest, anchor = moved_to(edit, fields), fields["object_box"]
    now = geometry.side_of(dest, anchor, 1.0)
    if now != planned or geometry.holds(relation, dest, anchor):
        raise ValueError(
            f"the {fields['subject']} went to {dest}, where '{now}' holds instead of the planned '{planned}'"
        )
    o1, o2 = others(relation, now)
    return {
        "S": fields["subject"],
        "O": fields["object"],
        "rel": geometry.phrase(relation),
        "now": geometry.phrase(now),
        "other_1": geometry.phrase(o1),
        "other_2": geometry.phrase(o2),
        "habit": habit(fields["subject"], relation, fields["object"]),
    }


def analysis_fields(edit: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The ``analysis_fields`` hook: the instruction's plan is the analysis (no model is asked)."""
    fields = json.loads(edit.get("instruction_fields_json") or "{}")
    missing = [
        k
        for k in ("relation", "new_relation", "destination_box", "object_box", "subject", "object")
        if k not in fields
    ]
    if missing:
        raise ValueError(f"edit {edit['id']}: the move plan lacks {missing}")
    return "from_edit_plan", fields


def qa_slots(edit: Mapping[str, Any], fields: Mapping[str, Any], settings: Any) -> dict[str, str] | list[Any]:
    """The ``qa_slots`` hook: :func:`slots`, or one problem when the move went elsewhere."""
    from tasks.plugin_api import Problem

    try:
        return slots(edit, fields)
    except (KeyError, TypeError, ValueError) as exc:
        return [Problem("main", "Q1-Q8", "sr_moved_elsewhere", f"{edit['task']}: {exc}")]

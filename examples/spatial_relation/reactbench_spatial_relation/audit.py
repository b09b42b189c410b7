"""The audit's truth check for the task: on a run built from the bundled sample, every gold
answer must be true of the drawn truth after the move.

What the edited picture shows is rebuilt from ``sample_truth.json`` and the editor's record:
the moved object's drawn box shifted to the recorded ``destination_box``, the other object's
drawn box as it was. Then each question's claim is decided by the task's geometry
(:mod:`reactbench_spatial_relation.geometry`), independently of the slots the questions were
rendered from: YN questions name one relation, MC options and SA golds name one each.
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping

from reactbench_spatial_relation import geometry

_BY_PHRASE = sorted(((p, r) for r, p in geometry.PHRASES.items()), key=lambda pr: -len(pr[0]))


def relation_named(text: str, obj: str) -> str | None:
    """The relation a sentence states about ``obj`` ("... to the left of the table" -> "left of")."""
    low = " ".join(text.lower().split())
    for ph, rel in _BY_PHRASE:
        if re.search(rf"\b{re.escape(ph)} (the |a )?{re.escape(obj.lower())}\b", low):
            return rel
    return None


def _drawn(image: Mapping[str, Any], box: list[float] | None) -> dict[str, Any] | None:
    if not box:
        return None
    for o in image["objects"].values():
        if all(abs(float(a) - float(b)) <= 1.0 for a, b in zip(o["box"], box)):
            return o
    return None


def check(edit: Mapping[str, Any], questions: list[Mapping[str, Any]], image: Mapping[str, Any]) -> list[str]:
    """Problems of one queued edit (empty: every gold answer is true of the drawn truth)."""
    problems: list[str] = []
    fields = json.loads(edit.get("instruction_fields_json") or "{}")
    meta = json.loads(edit.get("qc_json") or "{}").get("editor_meta") or {}
    mover = _drawn(image, list(edit.get("target_box") or []))
    anchor = _drawn(image, fields.get("object_box"))
    if mover is None or anchor is None:
        return [f"spatial_relation: the moved object {edit.get('target_box')} or the other one {fields.get('object_box')} is no drawn object"]
    dest = meta.get("destination_box")
    if meta.get("operation") != "move" or not dest:
        return [f"spatial_relation: the editor recorded {meta.get('operation')!r}, not a move with a destination"]
    x0, y0, w, h = mover["box"]
    moved = [float(dest[0]), float(dest[1]), float(w), float(h)]
    still = anchor["box"]
    relation = fields.get("relation", "")
    if geometry.holds(relation, moved, still):
        problems.append(f"spatial_relation: after the move the {mover['name']} is still {geometry.phrase(relation)} the {anchor['name']}")
    obj = fields.get("object") or anchor["name"]

    def true(rel: str) -> bool:
        return geometry.holds(rel, moved, still)

    for q in questions:
        if q.get("question_set") not in (None, "main"):
            continue
        qtype, gold, text = q["qtype"], q["gold"], q["text"]
        if qtype == "YN":
            rel = relation_named(text, obj)
            if rel is None:
                problems.append(f"spatial_relation {q['qid']}: no relation found in {text!r}")
            elif ("Yes" if true(rel) else "No") != gold:
                problems.append(f"spatial_relation {q['qid']}: {text!r} gold {gold}, but the truth says {'Yes' if true(rel) else 'No'}")
        elif qtype == "SA":
            rel = relation_named(gold, obj)
            if rel is None or not true(rel):
                problems.append(f"spatial_relation {q['qid']}: SA gold {gold!r} is not true of the drawn truth")
        elif qtype == "MC":
            opts = list(q.get("options") or [])
            right = "ABCDEFGH".index(gold)
            for i, opt in enumerate(opts):
                rel = relation_named(opt, obj)
                if rel is None:
                    problems.append(f"spatial_relation {q['qid']}: option {opt!r} names no relation")
                elif true(rel) != (i == right):
                    problems.append(f"spatial_relation {q['qid']}: option {opt!r} is {'true' if true(rel) else 'false'} of the truth but {'is' if i == right else 'is not'} the gold")
    return problems

"""The audit's truth check for the task: on a run built from the bundled sample, every gold
answer must be true of the drawn truth after the move.

What the edited picture shows is rebuilt from ``sample_truth.json`` and the editor's record:
the moved object's drawn box shifted to the recorded ``destination_box``, the other object's
drawn box as it was. Then each question's claim is decided by the task's geometry
(:mod:`reactbench_spatial_relation.geometry`), independently of the slots the questions were
rendered from: YN questions name one relation, MC options and SA golds name one each.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from reactbench_spatial_relation import geometry

_BY_PHRASE = sorted(((p, r) for r, p in geometry.PHRASES.items()), key=lambda pr: -len(pr[0]))


def relation_named(text: str, obj: str) -> str | None:
    """The relation a sentence states about ``obj`` ("... to the left of the table" -> "left of")."""
    low = " ".join(text.lower().split())
    for ph, rel in _BY_PHRASE:
        if re.search(rf"\b{re.escape(ph)} (the |a )?{re.escape(obj.lower())}\b", low):
            return rel
    return None


def check(
    mover: Mapping[str, Any],
    anchor: Mapping[str, Any],
    fields: Mapping[str, Any],
    meta: Mapping[str, Any],
    questions: list[Mapping[str, Any]],
) -> list[str]:
    """Problems of one queued edit (empty: every gold answer is true of the drawn truth).
    ``mover`` / ``anchor``: the drawn objects (``name``, ``box``) the edit moved and left."""
    problems: list[str] = []
    dest = meta.get("destination_box")
    if meta.get("operation") != "move" or not dest:
        return [f"spatial relation: the editor recorded {meta.get('operation')!r}, not a move with a destination"]
    w, h = float(mover["box"][2]), float(mover["box"][3])
    moved = [float(dest[0]), float(dest[1]), w, h]
    still = anchor["box"]
    relation = fields.get("relation", "")
    if geometry.holds(relation, moved, still):
        problems.append(
            f"after the move the {mover['name']} is still {geometry.phrase(relation)} the {anchor['name']}"
        )
    obj = str(fields.get("object") or anchor["name"])

    def true(rel: str) -> bool:
        return geometry.holds(rel, moved, still)

    for q in questions:
        if q.get("question_set") not in (None, "main"):
            continue
        qtype, gold, text, qid = q["qtype"], q["gold"], q["text"], q["qid"]
        if qtype == "YN":
            rel = relation_named(text, obj)
            if rel is None:
                problems.append(f"{qid}: no relation to the {obj} in {text!r}")
            elif ("Yes" if true(rel) else "No") != gold:
                problems.append(
                    f"{qid}: {text!r} gold {gold}, but the drawn truth says {'Yes' if true(rel) else 'No'}"
                )
        elif qtype == "SA":
            rel = relation_named(gold, obj)
            if rel is None or not true(rel):
                problems.append(f"{qid}: the short answer {gold!r} is not true of the drawn truth")
        elif qtype == "MC":
            opts = list(q.get("options") or [])
            right = "ABCDEFGH".index(gold)
            for i, opt in enumerate(opts):
                rel = relation_named(opt, obj)
                if rel is None:
                    problems.append(f"{qid}: option {opt!r} names no relation to the {obj}")
                elif true(rel) != (i == right):
                    problems.append(
                        f"{qid}: option {opt!r} is {'true' if true(rel) else 'false'} of the drawn truth but {'is' if i == right else 'is not'} the gold"
                    )
    return problems


def audit_checks(scene: Any, problems: list[str]) -> None:
    """The ``audit_checks`` hook (``tasks.tools.audit.EditScene``): the moved object is the
    target, the other one is found by its annotated box and must not have been painted over."""
    anchor = scene.world.find(scene.fields.get("object_box"))
    if anchor is None:
        problems.append(f"the other object's box {scene.fields.get('object_box')} is no drawn object")
        return
    if anchor.get("erased"):
        problems.append(f"the move painted over the {anchor['name']} ({anchor.get('touched', 0):.0%} of it)")
    problems.extend(check(scene.target, anchor, scene.fields, scene.meta, scene.questions))

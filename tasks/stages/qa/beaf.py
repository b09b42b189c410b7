"""BEAF-style existence questions for removal edits (optional, ``qa.beaf``).

The same "is there X?" question is asked on the original and on the edited picture, for the
removed object (Yes -> No), for objects still present (Yes -> Yes) and for objects never in
the picture (No -> No). Pairs share (edit_id, qid), so the evaluator can compute the
change-aware metrics TU / IG / SB / ID from them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from storage.annotation.boxes import overlap
from storage.hashing import stable_id
from tasks.stages.qa.render import Problem, Rendered
from tasks.stages.qa.templates import beaf_settings
from tasks.stages.qa.text import canonical, with_article


def _order(names: list[str], key: str) -> list[str]:
    """A deterministic, edit-specific order (so different edits probe different objects)."""
    return sorted(names, key=lambda n: hashlib.sha256(f"{key}\x1f{n}".encode()).hexdigest())


def _covered(box: Sequence[float] | None, target: Sequence[float] | None) -> bool:
    """True when ``box`` lies mostly (> 50 %) inside the erased ``target`` box."""
    if not box or not target or len(box) != 4 or len(target) != 4:
        return False
    return overlap(box, target) > 0.5


def beaf_questions(
    removed: str,
    context: list[Mapping[str, Any]],
    target_box: Sequence[float] | None,
    base: Mapping[str, Any],
    original_image: str,
    edited_image: str,
    *,
    same_type_elsewhere: bool | None = None,
) -> Rendered:
    """The BEAF pairs of one removal edit; ``context`` lists the other annotated objects ({name, box}).

    Names are compared as canonical classes (the miner's canonicaliser: "skateboard wheels" and
    "wheel" differ, "Wheels" and "wheel" do not), so gold "No" on the edited image is given only
    when no other instance of the removed class remains; the analysis' ``same_type_elsewhere``
    says the same from the model's side, and either one drops the question with a reason."""
    cfg = beaf_settings()
    edit_id = str(base["edit_id"])
    removed = canonical(removed)
    names_in_image = {canonical(o.get("name")) for o in context if o.get("name")}
    # objects of the removed class that stay (the removed instance itself lies inside the erased box)
    left_same = [
        o
        for o in context
        if o.get("name") and canonical(o.get("name")) == removed and not _covered(o.get("box"), target_box)
    ]
    probes: list[tuple[str, str, str, str]] = []  # (dimension, object, gold on original, gold on edited)
    out = Rendered()
    if not removed:
        out.problems.append(Problem("beaf", "B1", "empty_slot", "beaf: the removed object has no name"))
    elif left_same or same_type_elsewhere:
        why = (
            f"another {removed!r} is annotated in the picture"
            if left_same
            else f"the analysis says another {removed!r} is elsewhere in the picture"
        )
        out.problems.append(
            Problem("beaf", "B1", "beaf_removed_object_still_present", f"beaf: {why}, so 'is there' stays Yes")
        )
    else:
        probes.append(("removed", removed, "Yes", "No"))
    present = sorted(
        {
            canonical(o.get("name"))
            for o in context
            if o.get("name") and canonical(o.get("name")) != removed and not _covered(o.get("box"), target_box)
        }
    )
    for name in _order(present, edit_id)[: int(cfg["max_present"])]:
        probes.append(("present", name, "Yes", "Yes"))
    absent = [n for n in cfg["absent_pool"] if canonical(n) not in names_in_image and canonical(n) != removed]
    for name in _order(absent, edit_id)[: int(cfg["max_absent"])]:
        probes.append(("absent", name, "No", "No"))
    for i, (dimension, name, gold_orig, gold_edit) in enumerate(probes, start=1):
        qid = f"B{i}"
        text = cfg["question"].format(obj=with_article(name))
        for role, image, gold in (("original", original_image, gold_orig), ("edited", edited_image, gold_edit)):
            out.rows.append(
                {
                    **base,
                    "id": stable_id(edit_id, "beaf", qid, role, 0, int(cfg.get("version", 1))),
                    "question_set": "beaf",
                    "qid": qid,
                    "qtype": "YN",
                    "dimension": dimension,
                    "text": text,
                    "options": None,
                    "gold": gold,
                    "rotation": 0,
                    "rubric_json": None,
                    "images": [image],
                    "image_role": role,
                }
            )
    return out

"""What the instruct stage's prompts (SPEC section 4) share: the candidate context every
template and rules answer reads, the base of their answer schemas and two name checks.

Each task's prompt (a template plus the pydantic schema its answer must satisfy) is named by its
spec's ``instruct_prompt`` hook and lives with the task (the built-ins': RE instruction, CA
instructions, AT edit plan, DC filter, in ``tasks/builtin_tasks/<id>/prompts.py``). Validators
that need the item (allowed edit types, the names in the relation) read it from the validation
context, which the prompt runner sets to the prompt's context.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from prompts.locations import area_fraction, distance, location_phrase
from storage.json_columns import context_objects
from storage.rows import CandidateRow

# A task's ``instruct_context(candidate, ctx) -> ctx`` hook (storage/task_spec.py HOOKS), resolved by the stage.
ContextHook = Callable[[CandidateRow, dict[str, object]], dict[str, object]]


def same_name(a: str, b: str) -> bool:
    """Names match ignoring case, articles and a plural ``s``."""

    def n(s: str) -> str:
        words = [w for w in s.lower().replace("-", " ").split() if w not in ("a", "an", "the")]
        return " ".join(w[:-1] if w.endswith("s") and len(w) > 3 else w for w in words)

    return n(a) == n(b) or n(a).endswith(" " + n(b)) or n(b).endswith(" " + n(a))


def mentions_preservation(text: str) -> bool:
    t = text.lower()
    return any(k in t for k in ("preserve", "unchanged", "do not alter", "don't alter", "keep ", "leave "))


# ---------------------------------------------------------------------------- outputs
class PromptOutput(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


# Which task asks which of these is the task's business: its spec names the prompt
# (``instruct_prompt`` hook, storage/task_spec.py); this module keys nothing on a task id.


# ---------------------------------------------------------------------------- contexts
def _objects(candidate: CandidateRow) -> list[dict[str, object]]:
    return [o for o in context_objects(candidate, f"candidate {candidate.get('id')!r}") if o.get("name")]


def candidate_context(candidate: CandidateRow, extend: ContextHook | None = None) -> dict[str, object]:
    """The template/rules context of one candidate row (names, boxes, location phrases, neighbours),
    extended by ``extend``: the task's ``instruct_context(candidate, ctx) -> ctx`` hook, which the
    stage resolves and hands down (this room imports no task)."""
    w, h = int(candidate["width"]), int(candidate["height"])
    box = list(candidate.get("target_box") or [])
    target = candidate.get("target_name") or candidate.get("class_name") or ""
    objs = _objects(candidate)
    others = [o for o in objs if o.get("id") != candidate.get("target_object_id")]
    for o in others:
        if o.get("box"):
            o["location"] = location_phrase(o["box"], w, h)
    near = (
        sorted((o for o in others if o.get("box")), key=lambda o: (distance(o["box"], box), o["name"]))
        if box
        else others
    )
    neighbours: list[str] = []
    for o in near:
        if o["name"] != target and o["name"] not in neighbours:
            neighbours.append(o["name"])
    partner = candidate.get("partner_name")
    target_is_subject = candidate.get("direction", "target_is_subject") != "target_is_object"
    ctx: dict[str, object] = {
        "candidate_id": candidate.get("id"),
        "task": candidate["task"],
        "variant": candidate.get("variant"),
        "width": w,
        "height": h,
        "target_name": target,
        "target_box": box,
        "target_synset": candidate.get("target_synset"),
        "target_location": location_phrase(box, w, h) if box else "the image",
        "target_area": area_fraction(box, w, h) if box else None,
        "partner_name": partner,
        "partner_box": list(candidate.get("partner_box") or []),
        "partner_location": location_phrase(candidate["partner_box"], w, h) if candidate.get("partner_box") else None,
        "predicate": candidate.get("predicate") or "with",
        "subject_name": target if target_is_subject else (partner or ""),
        "object_name": (partner or "") if target_is_subject else target,
        "attribute": candidate.get("attribute"),
        "same_instance_count": int(candidate.get("same_instance_count") or 1),
        "assigned_edit_type": candidate.get("edit_type"),
        "fallback_chain": list(candidate.get("fallback_chain") or []),
        "count": candidate.get("count"),
        "class_name": candidate.get("class_name") or target,
        "points": candidate.get("points") or [],
        "objects": others,
        "object_names": sorted({o["name"] for o in others}),
        "neighbour_names": neighbours[:3],
    }
    if extend is not None:  # what a task's prompt reads beyond these keys
        ctx = extend(candidate, ctx)
    return ctx

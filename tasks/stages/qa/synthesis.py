"""Per edit: analysis fields -> the task's full question set (+ BEAF pairs), checked, as rows and rejects."""

from __future__ import annotations

from typing import Any

from storage.hashing import stable_id
from storage.coverage import cut_names, names_mentioned
from storage.json_columns import candidate_of, context_objects, cut_objects_of
from storage.rejects import reject
from storage.task_spec import task_hook
from tasks.stages.qa import mc
from tasks.stages.qa.beaf import beaf_questions
from tasks.stages.qa.checks import LengthRule
from tasks.stages.qa.counting import check_counts
from tasks.stages.qa.fields import at_slots, ca_slots, dc_slots, re_slots
from tasks.stages.qa.render import Problem, Rendered, RenderSettings, render_questions

STAGE = "qa"


def settings_from(cfg: Any, run_seed: int) -> RenderSettings:
    """Render settings from the ``qa`` config section."""
    return RenderSettings(
        mc_mode=cfg.mc_mode,
        run_seed=int(run_seed),
        control=bool(cfg.control_questions),
        length_rule=LengthRule(cfg.mc_length_ratio, cfg.mc_length_min_gap),
    )


def _context_objects(edit: dict[str, Any]) -> list[dict[str, Any]]:
    owner = f"edit {edit['id']}"
    return context_objects(candidate_of(edit, owner), owner)


QA_SLOTS = "qa_slots"  # spec hooks the question step reads (storage/task_spec.py)
QA_BEAF = "qa_beaf"


def questions_for_edit(edit: dict[str, Any], fields: dict[str, Any], settings: RenderSettings, *, beaf: bool = False) -> Rendered:
    """Render every question of one edit from its analysis fields (pure: no I/O).

    The task's ``qa_slots`` hook turns the fields into slot values (or problems); with ``beaf``,
    its ``qa_beaf`` hook says which object an edit removed, for the BEAF pairs."""
    task = edit["task"]
    base = {"edit_id": edit["id"], "editor": edit["editor"], "task": task, "variant": edit["variant"]}
    original, edited = edit.get("original_image"), edit.get("edited_image")
    images = {"original": [original], "edited": [edited], "pair": [original, edited]}
    slots = task_hook(task, QA_SLOTS)
    if slots is None:
        return Rendered(problems=[Problem("main", "-", "unknown_task", f"no question set for task {task!r}")])
    values = slots(edit, fields, settings)
    if isinstance(values, list):
        return Rendered(problems=values)
    out = render_questions(task, values, base, images, settings)
    beaf_removed = task_hook(task, QA_BEAF) if beaf else None
    removal = beaf_removed(edit, fields, values) if beaf_removed is not None else None
    if removal is not None:
        more = beaf_questions(removal["removed"] or "", _context_objects(edit), edit.get("target_box"), base, original, edited,
                              same_type_elsewhere=bool(removal.get("same_type_elsewhere")))
        out.rows.extend(more.rows)
        out.problems.extend(more.problems)
    return out


# ---------------------------------------------------------------------------- per task: fields -> slots
# The ``qa_slots`` hook of a task: (edit row, analysis fields, RenderSettings) -> {slot: text} for
# its question templates, or a list of Problem when the fields cannot make its question set.
def qa_slots_relational_erasure(edit: dict[str, Any], fields: dict[str, Any], settings: RenderSettings) -> dict[str, str] | list[Problem]:
    """RE slots; none when the analysis names as remaining at the erased place an object the edit
    cut into (``storage.coverage.BOX_REMAINS_AT_MOST``), as a model reading the picture may."""
    named = names_mentioned(str(fields.get("remaining_at_A") or ""), cut_names(cut_objects_of(edit, f"edit {edit['id']}")))
    if named:
        return [Problem("main", "Q5-Q8", "claim_contradicts_edit",
                        f"{edit['task']}: remaining_at_A names the {', '.join(named)}, which the edit cut into")]
    return re_slots(fields)


def qa_slots_counterfactual_attribute(edit: dict[str, Any], fields: dict[str, Any], settings: RenderSettings) -> dict[str, str]:
    return ca_slots(fields)


def qa_slots_alteration_tracing(edit: dict[str, Any], fields: dict[str, Any], settings: RenderSettings) -> dict[str, str]:
    return at_slots(fields, edit.get("edit_type"))


def qa_slots_dense_counting(edit: dict[str, Any], fields: dict[str, Any], settings: RenderSettings) -> dict[str, str] | list[Problem]:
    """The eight counts around the truth, checked; a count that cannot make them is a problem.
    (``"dc"`` salts the per-edit seed: a constant of this function, not a key on the task.)"""
    try:
        values, plan = dc_slots(fields.get("count"), str(fields.get("class_name") or ""), mc.question_seed(settings.run_seed, edit["id"], "dc"))
    except ValueError as exc:
        return [Problem("main", "Q1-Q8", "dc_invalid_count", f"{edit['task']}: {exc}")]
    bad = check_counts(plan)
    if bad:
        return [Problem("main", "Q1-Q8", reason, f"{edit['task']}: {detail}") for reason, detail in bad]
    return values


# The ``qa_beaf`` hook of a task: (edit row, analysis fields, slot values) -> None when the edit
# removed no object, else {"removed": the annotated class of the erased object ("a red apple" is
# an apple), "same_type_elsewhere": whether another one stays in the picture}.
def qa_beaf_relational_erasure(edit: dict[str, Any], fields: dict[str, Any], values: dict[str, str]) -> dict[str, Any]:
    return {"removed": edit.get("target_name") or values.get("B_name"),
            "same_type_elsewhere": fields.get("same_type_elsewhere") in (True, "true", "True", "yes")}


def qa_beaf_alteration_tracing(edit: dict[str, Any], fields: dict[str, Any], values: dict[str, str]) -> dict[str, Any] | None:
    if values.get("op_past") != "removed":
        return None
    return {"removed": edit.get("target_name") or values.get("B"), "same_type_elsewhere": False}


def problem_rejects(edit: dict[str, Any], problems: list[Problem]) -> list[dict[str, Any]]:
    """Reject rows for questions that failed a check (id: the question slot, so reruns match)."""
    return [
        reject(
            stable_id(edit["id"], p.question_set, p.qid, p.reason),
            STAGE,
            p.reason,
            f"edit {edit['id']} ({edit['editor']}): {p.question_set} {p.qid}: {p.detail}",
            {"edit_id": edit["id"], "question_set": p.question_set, "qid": p.qid},
        )
        for p in problems
    ]

"""Per edit: analysis fields -> the task's full question set (+ BEAF pairs), checked, as rows and rejects."""

from __future__ import annotations

from typing import Any

from storage.hashing import stable_id
from storage.json_columns import candidate_of, context_objects
from storage.rejects import reject
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


def questions_for_edit(edit: dict[str, Any], fields: dict[str, Any], settings: RenderSettings, *, beaf: bool = False) -> Rendered:
    """Render every question of one edit from its analysis fields (pure: no I/O)."""
    task = edit["task"]
    base = {"edit_id": edit["id"], "editor": edit["editor"], "task": task, "variant": edit["variant"]}
    original, edited = edit.get("original_image"), edit.get("edited_image")
    images = {"original": [original], "edited": [edited], "pair": [original, edited]}
    if task == "relational_erasure":
        values = re_slots(fields)
    elif task == "counterfactual_attribute":
        values = ca_slots(fields)
    elif task == "alteration_tracing":
        values = at_slots(fields, edit.get("edit_type"))
    elif task == "dense_counting":
        count = fields.get("count")
        try:
            values, plan = dc_slots(count, str(fields.get("class_name") or ""), mc.question_seed(settings.run_seed, edit["id"], "dc"))
        except ValueError as exc:
            return Rendered(problems=[Problem("main", "Q1-Q8", "dc_invalid_count", f"dense_counting: {exc}")])
        bad = check_counts(plan)
        if bad:
            return Rendered(problems=[Problem("main", "Q1-Q8", reason, f"dense_counting: {detail}") for reason, detail in bad])
    else:
        return Rendered(problems=[Problem("main", "-", "unknown_task", f"no question set for task {task!r}")])
    out = render_questions(task, values, base, images, settings)
    removal = task == "relational_erasure" or (task == "alteration_tracing" and values.get("op_past") == "removed")
    if beaf and removal:
        # the annotated class of the erased object, not the model's phrase ("a red apple" is an apple)
        removed = edit.get("target_name") or (values.get("B_name") if task == "relational_erasure" else values.get("B"))
        elsewhere = fields.get("same_type_elsewhere") if task == "relational_erasure" else None
        more = beaf_questions(removed or "", _context_objects(edit), edit.get("target_box"), base, original, edited,
                              same_type_elsewhere=elsewhere in (True, "true", "True", "yes"))
        out.rows.extend(more.rows)
        out.problems.extend(more.problems)
    return out


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

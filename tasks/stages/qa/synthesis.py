"""Per edit: analysis fields -> the task's full question set (+ BEAF pairs), checked, as rows and rejects."""

from __future__ import annotations

from typing import Any

from storage.hashing import stable_id
from storage.json_columns import candidate_of, context_objects
from storage.rejects import reject
from storage.task_spec import task_hook
from tasks.engine.config import QAConfig
from tasks.stages.qa.beaf import beaf_questions
from tasks.stages.qa.checks import LengthRule
from tasks.stages.qa.render import Problem, Rendered, RenderSettings, render_questions

STAGE = "qa"


def settings_from(cfg: QAConfig, run_seed: int) -> RenderSettings:
    """Render settings from the ``qa`` config section."""
    return RenderSettings(
        mc_mode=cfg.mc_mode,
        run_seed=int(run_seed),
        control=bool(cfg.control_questions),
        length_rule=LengthRule(cfg.mc_length_ratio, cfg.mc_length_min_gap),
        balance=bool(cfg.balance_yes_no),
    )


def _context_objects(edit: dict[str, Any]) -> list[dict[str, Any]]:
    owner = f"edit {edit['id']}"
    return context_objects(candidate_of(edit, owner), owner)


QA_SLOTS = "qa_slots"  # spec hooks the question step reads (storage/task_spec.py)
QA_BEAF = "qa_beaf"


def questions_for_edit(
    edit: dict[str, Any], fields: dict[str, Any], settings: RenderSettings, *, beaf: bool = False
) -> Rendered:
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
        more = beaf_questions(
            removal["removed"] or "",
            _context_objects(edit),
            edit.get("target_box"),
            base,
            original,
            edited,
            same_type_elsewhere=bool(removal.get("same_type_elsewhere")),
        )
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

"""DC's questions: the annotated count is the analysis (no model asked); the eight counts around
it, checked, fill the template slots."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tasks.builtin_tasks.dense_counting.counting import CountPlan, check_counts, plan_counts
from tasks.plugin_api import Problem, RenderSettings, candidate_of, clean, plural, question_seed

if TYPE_CHECKING:
    from tasks.plugin_api import EditRow


def count_slots(count: int, class_name: str, seed: int) -> tuple[dict[str, str], CountPlan]:
    """Dense counting: the numbers of the eight questions and ``things`` (the plural class name)."""
    plan = plan_counts(count, seed)
    return {**plan.slots(), "things": plural(clean(class_name))}, plan


def analysis_fields(e: EditRow) -> tuple[str, dict[str, object]]:
    """The annotated count is the truth; the class name names what is counted."""
    cand = candidate_of(e, f"edit {e['id']}")
    return "ground_truth_count", {
        "count": cand.get("count"),
        "class_name": cand.get("class_name") or cand.get("target_name") or e.get("target_name"),
    }


def qa_slots(edit: EditRow, fields: dict[str, object], settings: RenderSettings) -> dict[str, str] | list[Problem]:
    """The eight counts around the truth, checked; a count that cannot make them is a problem.
    (``"dc"`` salts the per-edit seed: a constant of this function, not a key on the task.)"""
    try:
        values, plan = count_slots(
            fields.get("count"),
            str(fields.get("class_name") or ""),
            question_seed(settings.run_seed, edit["id"], "dc"),
        )
    except ValueError as exc:
        return [Problem("main", "Q1-Q8", "dc_invalid_count", f"{edit['task']}: {exc}")]
    bad = check_counts(plan)
    if bad:
        return [Problem("main", "Q1-Q8", reason, f"{edit['task']}: {detail}") for reason, detail in bad]
    return values

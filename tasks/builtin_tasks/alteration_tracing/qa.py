"""AT's questions: the edit plan is the analysis (no model asked), its fields -> the template
slots (any accepted spelling), and the object a removal took away for the BEAF pairs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from tasks.plugin_api import RenderSettings, clean, instruction_fields

if TYPE_CHECKING:
    from tasks.plugin_api import EditRow

OP_PAST = {"delete": "removed", "add": "added", "replace": "replaced", "move": "moved"}

# AT edit-plan field names we accept -> our slot names. The paper-style names (A, B, C, choice_1a_...)
# and descriptive ones are both fine, so the instruct prompt may use either.
_AT_ALIASES: dict[str, tuple[str, ...]] = {
    "A": ("A", "A_location", "location"),
    "B": ("B", "B_name", "object"),
    "C": ("C", "change", "C_change"),
    "A_prime": ("A_prime", "control_location"),
    "B_prime": ("B_prime", "control_object"),
    "C_prime": ("C_prime", "wrong_change"),
}


_AT_LISTS: dict[str, tuple[str, ...]] = {
    # our stem: (names of a 3-item list field, prefix of numbered fields <prefix>_1..3)
    "change_distractor": ("overall_distractors", "choice_1a_distractor"),
    "location_distractor": ("location_distractors", "choice_2a_distractor"),
    "object_distractor": ("object_location_distractors", "choice_3a_distractor"),
    "control_object_distractor": ("b_prime_distractors", "choice_1b_distractor"),
    "control_location_distractor": ("a_prime_distractors", "choice_2b_distractor"),
    "control_name_distractor": ("c_prime_objects", "choice_3b_distractor"),
}


def _pick(plan: Mapping[str, object], names: tuple[str, ...]) -> str:
    for n in names:
        if plan.get(n) not in (None, ""):
            return clean(plan[n])
    return ""


def slots_from_plan(plan: Mapping[str, object], edit_type: str | None) -> dict[str, str]:
    """Alteration tracing: the edit plan's fields (any accepted spelling) plus ``op_past``."""
    out = {slot: _pick(plan, names) for slot, names in _AT_ALIASES.items()}
    for stem, (list_key, numbered) in _AT_LISTS.items():
        values = plan.get(list_key)
        for i in range(3):
            if isinstance(values, (list, tuple)) and i < len(values):
                out[f"{stem}_{i + 1}"] = clean(values[i])
            else:
                out[f"{stem}_{i + 1}"] = _pick(plan, (f"{numbered}_{i + 1}", f"{stem}_{i + 1}"))
    kind = clean(edit_type or plan.get("edit_type")).lower()
    out["op_past"] = OP_PAST.get(kind, "")
    return out


def analysis_fields(e: EditRow) -> tuple[str, dict[str, object]]:
    """The edit plan of the instruct stage is the analysis (it holds the question materials)."""
    eid = e["id"]
    plan = instruction_fields(e, f"edit {eid}")
    if not plan:
        raise ValueError(f"edit {eid}: alteration tracing needs the edit plan in instruction_fields_json")
    return "from_edit_plan", {**plan, "edit_type": e.get("edit_type") or plan.get("edit_type")}


def qa_slots(edit: EditRow, fields: dict[str, object], settings: RenderSettings) -> dict[str, str]:
    return slots_from_plan(fields, edit.get("edit_type"))


def qa_beaf(edit: EditRow, fields: dict[str, object], values: dict[str, str]) -> dict[str, object] | None:
    if values.get("op_past") != "removed":
        return None
    return {"removed": edit.get("target_name") or values.get("B"), "same_type_elsewhere": False}

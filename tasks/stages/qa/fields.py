"""Per-task slot values: turn an analysis / edit plan / ground-truth count into template slots.

One function per task; each returns a flat ``{slot: text}`` dict. Only grammar glue lives here
(articles, plurals, verb forms, aliases of upstream field names); the wording is in the YAML.
"""

from __future__ import annotations

from typing import Any, Mapping

from tasks.stages.qa.counting import CountPlan, plan_counts
from tasks.stages.qa.text import canonical, clean, plural, with_article

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


def re_slots(analysis: Mapping[str, Any]) -> dict[str, str]:
    """Relational erasure: analysis fields plus ``B`` (the removed object with its determiner)."""
    out = {k: clean(v) for k, v in analysis.items() if not isinstance(v, (list, dict))}
    name = out.get("B_name", "")
    det = out.get("B_count_descriptor", "").lower()
    if name:
        if det in ("", "a", "an"):  # one object: the singular class name agrees with "a"/"an"
            out["B_name"] = name = canonical(name)
            out["B"] = with_article(name)
        else:
            out["B"] = f"{det} {name}"
    return out


def ca_slots(analysis: Mapping[str, Any]) -> dict[str, str]:
    """Counterfactual attribute: analysis fields plus ``A_object_a`` (the object with an article if countable)."""
    out = {k: clean(v) for k, v in analysis.items() if not isinstance(v, (list, dict))}
    obj = out.get("A_object", "")
    if obj:
        number = out.get("A_number", "singular").lower()
        out["A_object_a"] = with_article(obj) if number == "singular" else obj
    return out


def _pick(plan: Mapping[str, Any], names: tuple[str, ...]) -> str:
    for n in names:
        if plan.get(n) not in (None, ""):
            return clean(plan[n])
    return ""


def at_slots(plan: Mapping[str, Any], edit_type: str | None) -> dict[str, str]:
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


def dc_slots(count: int, class_name: str, seed: int) -> tuple[dict[str, str], CountPlan]:
    """Dense counting: the numbers of the eight questions and ``things`` (the plural class name)."""
    plan = plan_counts(count, seed)
    return {**plan.slots(), "things": plural(clean(class_name))}, plan

"""RE's question slots: the analysis fields -> the template slots, and the object the BEAF pairs ask about."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from tasks.plugin_api import (
    Problem,
    RenderSettings,
    canonical,
    clean,
    cut_names,
    cut_objects_of,
    names_mentioned,
    with_article,
)

if TYPE_CHECKING:
    from tasks.plugin_api import EditRow


def slots_from_analysis(analysis: Mapping[str, object]) -> dict[str, str]:
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


def qa_slots(edit: EditRow, fields: dict[str, object], settings: RenderSettings) -> dict[str, str] | list[Problem]:
    """RE slots; none when the analysis names as remaining at the erased place an object the edit
    cut into (``storage.annotation.coverage.BOX_REMAINS_AT_MOST``), as a model reading the picture may."""
    named = names_mentioned(
        str(fields.get("remaining_at_A") or ""), cut_names(cut_objects_of(edit, f"edit {edit['id']}"))
    )
    if named:
        return [
            Problem(
                "main",
                "Q5-Q8",
                "claim_contradicts_edit",
                f"{edit['task']}: remaining_at_A names the {', '.join(named)}, which the edit cut into",
            )
        ]
    return slots_from_analysis(fields)


def qa_beaf(edit: EditRow, fields: dict[str, object], values: dict[str, str]) -> dict[str, object]:
    return {
        "removed": edit.get("target_name") or values.get("B_name"),
        "same_type_elsewhere": fields.get("same_type_elsewhere") in (True, "true", "True", "yes"),
    }

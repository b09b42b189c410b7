"""CA's question slots: the analysis fields -> the template slots."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from tasks.plugin_api import RenderSettings, clean, with_article

if TYPE_CHECKING:
    from tasks.plugin_api import EditRow


def slots_from_analysis(analysis: Mapping[str, object]) -> dict[str, str]:
    """Counterfactual attribute: analysis fields plus ``A_object_a`` (the object with an article if countable)."""
    out = {k: clean(v) for k, v in analysis.items() if not isinstance(v, (list, dict))}
    obj = out.get("A_object", "")
    if obj:
        number = out.get("A_number", "singular").lower()
        out["A_object_a"] = with_article(obj) if number == "singular" else obj
    return out


def qa_slots(edit: EditRow, fields: dict[str, object], settings: RenderSettings) -> dict[str, str]:
    return slots_from_analysis(fields)

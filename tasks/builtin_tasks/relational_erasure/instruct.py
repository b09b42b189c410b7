"""RE's instruction rows: the prompt's validated answer -> the one removal to perform."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tasks.plugin_api import same_name

if TYPE_CHECKING:
    from tasks.plugin_api import CandidateRow


def instruct_rows(c: CandidateRow, f: dict[str, object]) -> list[dict[str, object]]:
    """One removal: of the target, or of the partner when the model chose to erase that one."""
    removes_partner = (
        bool(c.get("partner_name"))
        and same_name(f["remove"], c["partner_name"])
        and not same_name(f["remove"], c.get("target_name") or "")
    )
    box, name = (
        (c.get("partner_box"), c.get("partner_name"))
        if removes_partner
        else (c.get("target_box"), c.get("target_name"))
    )
    return [
        {"instruction": f["instruction"], "edit_type": "remove", "target_box": box, "target_name": name, "fields": f}
    ]

"""DC's instruction rows: the ambiguity filter's verdict; no edit follows."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tasks.plugin_api import CandidateRow


def instruct_rows(c: CandidateRow, f: dict[str, object]) -> list[dict[str, object]]:
    """The ambiguity filter keeps (none/mild) or drops (moderate/severe); no edit follows."""
    keep = f["severity"] in ("none", "mild")
    return [{"status": "applicable" if keep else "not_applicable", "edit_type": "none", "fields": f}]

"""DC's instruction rows: the ambiguity filter's verdict; no edit follows."""

from __future__ import annotations

from typing import Any


def instruct_rows(c: dict[str, Any], f: dict[str, Any]) -> list[dict[str, Any]]:
    """The ambiguity filter keeps (none/mild) or drops (moderate/severe); no edit follows."""
    keep = f["severity"] in ("none", "mild")
    return [{"status": "applicable" if keep else "not_applicable", "edit_type": "none", "fields": f}]

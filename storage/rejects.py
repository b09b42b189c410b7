"""Reject rows: nothing is dropped silently; every refusal is a row with a reason code."""

from __future__ import annotations

from typing import Any

from storage.hashing import canonical_json


def reject(item_id: str, stage: str, reason: str, detail: str = "", payload: Any = None) -> dict[str, Any]:
    """One row of the ``rejects`` artifact. ``reason`` is a snake_case code (e.g. ``llm_unparseable``)."""
    if not reason or not reason.replace("_", "").isalnum() or reason.lower() != reason:
        raise ValueError(f"reject reason must be a snake_case code, got {reason!r}")
    return {
        "id": str(item_id),
        "stage": stage,
        "reason": reason,
        "detail": detail,
        "payload_json": None if payload is None else canonical_json(payload),
    }

"""Reject rows: nothing is dropped silently; every refusal is a row with a reason code."""

from __future__ import annotations

import re
from typing import TypedDict

from storage.hashing import canonical_json

# ``<_io.BytesIO object at 0x7f...>``: an object's default repr holds its memory address, which
# differs on every run; rejects name what failed in words, so two builds give the same rows.
_ADDRESS = re.compile(r"<([^<>]*?) at 0x[0-9a-fA-F]+>")


def without_addresses(text: str) -> str:
    """``text`` with the memory address of every default object repr removed."""
    return _ADDRESS.sub(r"<\1>", text)


class RejectRow(TypedDict):
    """One row of a stage's ``rejects`` artifact (``storage.schemas.REJECTS``)."""

    id: str  # the rejected item (or source reference)
    stage: str
    reason: str  # snake_case code
    detail: str
    payload_json: str | None  # what was rejected (raw text, metrics, ...), canonical JSON


def reject(item_id: str, stage: str, reason: str, detail: str = "", payload: object = None) -> RejectRow:
    """One row of the ``rejects`` artifact. ``reason`` is a snake_case code (e.g. ``llm_unparseable``)."""
    if not reason or not reason.replace("_", "").isalnum() or reason.lower() != reason:
        raise ValueError(f"reject reason must be a snake_case code, got {reason!r}")
    return {
        "id": str(item_id),
        "stage": stage,
        "reason": reason,
        "detail": without_addresses(detail),
        "payload_json": None if payload is None else without_addresses(canonical_json(payload)),
    }

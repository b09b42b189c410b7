"""The qa stage's rejects for edits whose verification failed (``editors/verify.py`` records the
verdict in the edit row's ``qc_json``; the qa stage passes over such an edit and records why here,
so the editors room builds no stage's rejects)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from storage.rejects import reject

VERIFY_FAILED = "verify_failed"


def _verdict(row: Mapping[str, Any]) -> dict[str, Any]:
    return json.loads(row.get("qc_json") or "{}").get("verification") or {}


def verification_failed(row: Mapping[str, Any]) -> bool:
    """Whether an edit row's recorded verification failed."""
    return not _verdict(row).get("passed", True)


def verify_reject(row: Mapping[str, Any], stage: str = "qa") -> dict[str, Any] | None:
    """The ``verify_failed`` reject of an edit row whose verification failed (None when it passed)."""
    verdict = _verdict(row)
    if verdict.get("passed", True):
        return None
    detail = f"instruction {row['instruction_id']}, editor {row['editor']}: " + "; ".join(
        verdict.get("failures") or ["verification failed"]
    )
    return reject(
        row["id"],
        stage,
        VERIFY_FAILED,
        detail,
        {"instruction_id": row["instruction_id"], "editor": row["editor"], "verification": verdict},
    )

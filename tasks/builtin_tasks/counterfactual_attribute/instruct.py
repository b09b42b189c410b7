"""CA's instruction rows: two attribute edits per candidate, and the drop of repeated counterfactuals."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Protocol

from tasks.plugin_api import Embedder, find_duplicates, instruction_fields, reject, transformers_embedder

if TYPE_CHECKING:
    from tasks.plugin_api import CandidateRow, InstructionRow, RejectRow

STAGE = "instruct"
_EMBEDDERS: dict[str, Embedder] = {}
_EMBEDDERS_LOCK = threading.Lock()


class DedupSettings(Protocol):
    """What :func:`instruct_dedup` reads of the instruct stage's config (``InstructConfig``)."""

    embedding_model: str | None
    embedding_threshold: float


def instruct_rows(c: CandidateRow, f: dict[str, object]) -> list[dict[str, object]]:
    """Two attribute edits (slots a and b), each with its direction and new value."""
    rows = []
    for slot in ("a", "b"):
        fields = {
            "slot": slot,
            "direction": f[f"direction_{slot}"],
            "new_attribute": f[f"new_attribute_{slot}"],
            "original_attribute": c.get("attribute"),
            "answer": f,
        }
        rows.append(
            {"slot": slot, "instruction": f[f"instruction_{slot}"], "edit_type": "attribute", "fields": fields}
        )
    return rows


def instruct_dedup(rows: list[InstructionRow], cfg: DedupSettings) -> tuple[list[InstructionRow], list[RejectRow]]:
    """The ``instruct_dedup`` hook of CA: drop rows (all of one task) whose new attribute repeats
    another's for the same object name (kept: lowest id order)."""
    ca = sorted((r for r in rows if r["status"] == "applicable"), key=lambda r: (r["candidate_id"], r["id"]))
    if len(ca) < 2:
        return rows, []
    embed = None
    if cfg.embedding_model:
        with _EMBEDDERS_LOCK:
            if cfg.embedding_model not in _EMBEDDERS:
                _EMBEDDERS[cfg.embedding_model] = transformers_embedder(cfg.embedding_model)
            embed = _EMBEDDERS[cfg.embedding_model]
    attrs = [instruction_fields(r, f"instruction {r['id']}")["new_attribute"] for r in ca]
    dups = find_duplicates([str(r["target_name"]) for r in ca], attrs, embed=embed, threshold=cfg.embedding_threshold)
    drop = {ca[d.index]["id"]: d for d in dups}
    rejects = [
        reject(
            ca[d.index]["id"],
            STAGE,
            "duplicate_counterfactual",
            f"{ca[d.index]['target_name']}: {attrs[d.index]!r} repeats {attrs[d.kept]!r} of instruction {ca[d.kept]['id']} ({d.how} match)",
            {"kept_id": ca[d.kept]["id"], "how": d.how, "similarity": d.similarity, "row": ca[d.index]},
        )
        for d in dups
    ]
    return [r for r in rows if r["id"] not in drop], rejects

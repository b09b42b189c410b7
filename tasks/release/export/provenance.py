"""What a run's own records say about how its release was made, for the release metadata.

Read from the run directory only (works the same on an object store): the stage manifests (when
each stage finished, the source files it read), the instruction and analysis rows (which model
and which prompt version wrote them), the review export (decisions per item, agreement) and the
saved config. Nothing here is typed by hand; ``tasks.release.export.croissant`` words it.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from storage import addresses
from storage.fs import RunFS
from storage.stage_store import MANIFEST
from tasks.engine.build_config import BuildConfig

STAGES = ("mine", "instruct", "edit", "qa", "review")


@dataclass
class ReviewSummary:
    """The human review as the review export recorded it (``review/verified_edits`` trails and
    ``review/decisions``); ``None`` figures where the run has no review."""

    k: int
    annotators: int = 0
    decisions: dict[str, Counter] = field(default_factory=dict)  # stage -> verdict -> count
    per_item: dict[str, dict[str, float]] = field(default_factory=dict)  # stage -> min / mean / max
    adjudicated: dict[str, int] = field(default_factory=dict)
    fleiss: dict[str, float | None] = field(default_factory=dict)  # stage -> Fleiss' kappa over items with >= 2
    multi_items: dict[str, int] = field(default_factory=dict)
    first: str | None = None
    last: str | None = None


@dataclass
class Provenance:
    sources: dict[str, dict[str, Any]]  # source -> {files, counts, config path}
    stage_times: dict[str, str]  # stage -> finished_at
    prompts: list[tuple[str, str, str]]  # (backend:model, prompt name, prompt version)
    review: ReviewSummary | None
    code_version: str | None


def _manifest(run: RunFS, stage: str) -> dict[str, Any] | None:
    try:
        return json.loads(run.read_text(stage, MANIFEST))
    except (FileNotFoundError, ValueError):
        return None


def read_provenance(run: RunFS, config: BuildConfig, verified: bool) -> Provenance:
    """Everything the metadata needs from ``run`` (``config``: the resolved run config)."""
    manifests = {s: m for s in STAGES if (m := _manifest(run, s)) is not None}
    sources: dict[str, dict[str, Any]] = {}
    mine = manifests.get("mine") or {}
    for name, where in config.sources.model_dump().items():
        if name == "other":
            for other, setting in (where or {}).items():
                sources[other] = {"config": setting, "files": {}, "counts": {}}
            continue
        if where:
            sources[name] = {"config": where, "files": {}, "counts": (mine.get("extra") or {}).get(name) or {}}
    for path, fingerprint in (mine.get("input_fingerprints") or {}).items():
        for name, info in sources.items():
            if isinstance(info["config"], str) and path.startswith(info["config"].rstrip("/") + "/"):
                info["files"][path[len(info["config"].rstrip("/")) + 1 :]] = fingerprint
    prompts: set[tuple[str, str, str]] = set()
    for address in (addresses.INSTRUCTIONS, addresses.ANALYSIS):
        reader = address.reader(run)
        if reader.exists():
            for r in reader.rows(columns=["backend", "model_id", "prompt_name", "prompt_version"]):
                if r["prompt_name"]:
                    prompts.add((f"{r['backend']}:{r['model_id']}", r["prompt_name"], str(r["prompt_version"])))
    code = next((m.get("code_version") for m in manifests.values() if m.get("code_version")), None)
    return Provenance(
        sources=sources,
        stage_times={s: m["finished_at"] for s, m in manifests.items() if m.get("finished_at")},
        prompts=sorted(prompts),
        review=read_review(run, config.review.k) if verified else None,
        code_version=code,
    )


def read_review(run: RunFS, k: int) -> ReviewSummary:
    """Decisions per item and agreement, from the review export's trails and decision log."""
    from tasks.review.agreement import fleiss_kappa

    out = ReviewSummary(k=k)
    per_item: dict[str, list[int]] = defaultdict(list)
    verdicts: dict[str, list[list[str]]] = defaultdict(list)
    reader = addresses.VERIFIED_EDITS.reader(run)
    if reader.exists():
        for r in reader.rows(columns=["decisions_json"]):
            trail = json.loads(r["decisions_json"] or "{}")
            if not isinstance(trail, dict):  # not a review export's trail (hand-made rows): nothing to count
                continue
            for stage, entry in trail.items():
                decs = [d.get("verdict") for d in entry.get("decisions") or []]
                per_item[stage].append(len(decs))
                out.adjudicated[stage] = out.adjudicated.get(stage, 0) + bool(entry.get("adjudicated"))
                if len(decs) >= 2:
                    verdicts[stage].append(decs)
    for stage, counts in sorted(per_item.items()):
        out.per_item[stage] = {"min": min(counts), "mean": sum(counts) / len(counts), "max": max(counts)}
        out.multi_items[stage] = len(verdicts[stage])
        out.fleiss[stage] = fleiss_kappa(verdicts[stage]) if verdicts[stage] else None
    log = addresses.DECISIONS.reader(run)
    if log.exists():
        rows = log.rows(columns=["item_kind", "action", "annotator", "created_at"])
        out.annotators = len({r["annotator"] for r in rows})
        for r in rows:
            out.decisions.setdefault(r["item_kind"], Counter())[r["action"]] += 1
        times = sorted(r["created_at"] for r in rows if r["created_at"])
        out.first, out.last = (times[0], times[-1]) if times else (None, None)
    return out

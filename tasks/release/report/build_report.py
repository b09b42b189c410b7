"""``reactbench report build``: counts through the stages and the reasons items were rejected."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from storage import addresses
from storage.fs import RunFS
from tasks.engine.suggest import suggest
from tasks.release.report.html import figure, page, table
from tasks.release.report.svg import hbars

STAGES = ("mine", "instruct", "edit", "qa", "review", "export")


def stage_facts(run: RunFS) -> list[dict[str, Any]]:
    """Per stage present in the run: status, counts and reject reasons (from the rejects rows)."""
    out = []
    for st in STAGES:
        manifest = json.loads(run.read_text(st, "_manifest.json")) if run.exists(st, "_manifest.json") else None
        rej = addresses.rejects(st).reader(run)
        reasons = Counter(r["reason"] for r in rej.iter_rows(columns=["reason"]))
        if manifest is None and not reasons and not run.exists(st):
            continue
        counts = (manifest or {}).get("counts") or {}
        out.append(
            {
                "stage": st,
                "status": (manifest or {}).get("status", "no manifest"),
                "counts": counts,
                "reasons": dict(sorted(reasons.items())),
            }
        )
    return out


def render_build_report(run: RunFS) -> str:
    facts = stage_facts(run)
    if not facts:
        raise FileNotFoundError(
            f"{run.url}: no stage output found; run `{suggest('build', '--run-dir', run.url)}` first"
        )
    flow_items = []
    rows = []
    for f in facts:
        outs = {k: v for k, v in f["counts"].items() if k not in ("rows_in", "rejected")}
        for k, v in outs.items():
            flow_items.append((f"{f['stage']}/{k}", float(v)))
        rows.append(
            [
                f["stage"],
                f["status"],
                f["counts"].get("rows_in"),
                ", ".join(f"{k}={v}" for k, v in outs.items()),
                sum(f["reasons"].values()),
            ]
        )
    top = max([v for _, v in flow_items] + [1.0])
    sections = [
        (
            "Stages",
            table(["stage", "status", "rows in", "rows out", "rejected"], rows)
            + figure(hbars(flow_items, "Rows out per stage artifact", max_value=top, unit="")),
        )
    ]
    rej_parts = []
    for f in facts:
        if f["reasons"]:
            top_r = float(max(f["reasons"].values()))
            rej_parts.append(
                f"<h3>{f['stage']}</h3>"
                + figure(
                    hbars(
                        sorted(f["reasons"].items(), key=lambda kv: (-kv[1], kv[0])),
                        f"Reject reasons in {f['stage']}",
                        max_value=top_r,
                        unit="",
                    )
                )
            )
    sections.append(("Reject reasons", "\n".join(rej_parts) or '<p class="muted">nothing was rejected</p>'))
    if run.exists(addresses.EDITS.folder):
        from tasks.release.report.ablation import GALLERY_COLUMNS, gallery

        sections.append(("Verification gallery", gallery(run, addresses.EDITS.reader(run).iter_rows(GALLERY_COLUMNS))))
    return page("Build report", sections, subtitle=f"run {run.url}")

"""``reactbench report ablation``: which editor to use, and the evidence.

At the top a verdict (tasks/release/report/ablation_figures.py): the editor giving the most kept,
hallucination-inducing items per device hour, with intervals saying whether its lead is real;
then per editor the yield from instruction to kept item, the cost per kept item, targeted minus
control accuracy per evaluated model, the licence of its weights (a warning when non-commercial
weights drew kept items), auto-QC details, downstream accuracy, side-by-side thumbnails and a
verification gallery. Unedited items (dense counting) belong to no editor and are counted apart.
"""

from __future__ import annotations

import base64
import io
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from storage import addresses
from storage.fs import RunFS
from storage.image_store import ImageStore
from storage.parquet_io import ArtifactReader
from tasks.engine.suggest import suggest
from tasks.release.evaluate.labels import folder_label
from tasks.release.evaluate.run import list_evaluations
from tasks.release.evaluate.schemas import ANSWERS
from tasks.release.metrics import accuracy
from tasks.release.report.html import figure, page, table
from tasks.release.report.svg import hbars, significant
from tasks.stages.edit import NO_EDITOR

if TYPE_CHECKING:
    from tasks.release.report.ablation_figures import EditorFigures, Induction


class NoEdits(RuntimeError):
    """The run has no ``edit/edits`` to compare."""


# What each part of the report reads of an edit row (the candidate and instruction JSON stay on disk).
EDITOR_COLUMNS = ["id", "editor", "status", "qc_json", "edit_seconds"]
PICTURE_COLUMNS = ["id", "instruction_id", "task", "instruction", "editor", "status", "original_image", "edited_image"]
GALLERY_COLUMNS = [*PICTURE_COLUMNS, "qc_json"]


def editor_rows(
    edits: Iterable[Mapping[str, Any]],
    accepted: set[str] | None,
    unsupported: dict[str, int] | None = None,
    other_rejects: dict[str, dict[str, int]] | None = None,
    seconds: dict[str, float] | None = None,
) -> list[dict[str, Any]]:
    """One summary dict per editor (sorted by name): supported requests (performed or failed while
    trying), unsupported ones, verified and failed verification, auto-QC, acceptance, timing (the
    rows' ``edit_seconds`` when ``edit.record_timings`` kept them, else ``seconds``: the manifest's record).
    One pass over ``edits`` (``EDITOR_COLUMNS`` of each), which may be a stream: nothing is kept per edit."""
    sums: dict[str, dict[str, Any]] = defaultdict(
        lambda: {
            "edits": 0,
            "passed": 0,
            "accepted": 0,
            "verified": 0,
            "secs": [0, 0.0],
            "qc": defaultdict(lambda: [0, 0.0]),
        }
    )
    for e in edits:
        if e["editor"] == NO_EDITOR:
            continue
        acc = sums[e["editor"]]
        acc["edits"] += 1
        if e["status"] == "ok":
            acc["passed"] += 1
            acc["accepted"] += int(accepted is not None and e["id"] in accepted)
        qc_fields = json.loads(e.get("qc_json") or "{}")
        for k, v in qc_fields.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                acc["qc"][k][0] += 1
                acc["qc"][k][1] += float(v)
        if e.get("edit_seconds") is not None:
            acc["secs"][0] += 1
            acc["secs"][1] += e["edit_seconds"]
        acc["verified"] += int(bool((qc_fields.get("verification") or {}).get("passed", True)))
    out = []
    for ed in sorted(set(sums) | set(unsupported or {})):
        acc = sums[ed]
        n, passed = acc["edits"], acc["passed"]
        refused = (unsupported or {}).get(ed, 0)
        out.append(
            {
                "editor": ed,
                "edits": n,
                "supported": n + sum((other_rejects or {}).get(ed, {}).values()),
                "unsupported": refused,
                "verified": acc["verified"],
                "failed_verification": n - acc["verified"],
                "auto_qc_pass": 100.0 * passed / n if n else None,
                "human_acceptance": (100.0 * acc["accepted"] / passed if passed else None)
                if accepted is not None
                else None,
                "seconds_per_image": acc["secs"][1] / acc["secs"][0] if acc["secs"][0] else (seconds or {}).get(ed),
                "qc_means": {k: total / count for k, (count, total) in sorted(acc["qc"].items())},
            }
        )
    return out


def downstream(run: RunFS) -> dict[str, dict[str, float | None]]:
    """Per evaluated model: main-set accuracy per editor (both modes pooled)."""
    out: dict[str, dict[str, float | None]] = {}
    for folder in list_evaluations(run):
        answers = ArtifactReader(run, f"{folder}/answers", ANSWERS).iter_rows(
            ["question_set", "status", "editor", "correct"]
        )
        rows = (
            r for r in answers if r["question_set"] == "main" and r["status"] != "error"
        )  # counted as they stream by
        out[folder.split("/", 1)[1]] = {
            a["editor"]: a["accuracy"] for a in accuracy(rows, ["editor"]) if a["editor"] != NO_EDITOR
        }
    return out


def _thumb(images: ImageStore, rel: str, width: int = 160) -> str:
    from PIL import Image

    im = Image.open(io.BytesIO(images.get_bytes(rel))).convert("RGB")
    h = max(1, round(im.height * width / im.width))
    buf = io.BytesIO()
    im.resize((width, h)).save(buf, format="JPEG", quality=80)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def thumbnails(run: RunFS, edits: Iterable[Mapping[str, Any]], limit: int = 6) -> str:
    """Original + each editor's result for the first ``limit`` instructions (most editors first);
    ``edits`` need ``PICTURE_COLUMNS`` only."""
    from html import escape

    images = ImageStore(run)
    by_instr: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in edits:
        if e["editor"] != NO_EDITOR:
            by_instr[e["instruction_id"]].append(e)
    chosen = sorted(by_instr.items(), key=lambda kv: (-len({e["editor"] for e in kv[1]}), kv[0]))[:limit]
    blocks = []
    for instr, group in chosen:
        group = sorted(group, key=lambda e: e["editor"])
        figs = []
        try:
            figs.append(
                f'<figure><img alt="original" src="{_thumb(images, group[0]["original_image"])}"><figcaption>original</figcaption></figure>'
            )
            for e in group:
                figs.append(
                    f'<figure><img alt="{escape(e["editor"])}" src="{_thumb(images, e["edited_image"])}"><figcaption>{escape(e["editor"])} ({escape(e["status"])})</figcaption></figure>'
                )
        except (FileNotFoundError, ValueError) as exc:
            figs.append(f'<p class="muted">images missing: {escape(str(exc))}</p>')
        blocks.append(
            f'<h3>{escape(group[0]["task"])}: {escape(group[0].get("instruction") or instr)}</h3><div class="thumbs">{"".join(figs)}</div>'
        )
    return "\n".join(blocks)


def gallery(run: RunFS, edits: Iterable[Mapping[str, Any]], per: int = 2) -> str:
    """Before / after thumbnails with the instruction and the verification verdict: a sample of
    ``per`` edits per (task, editor) (the lowest ids), so an author sees what each editor really
    does. One pass over ``edits`` (``GALLERY_COLUMNS``), which may be a stream: only the sample is kept."""
    from html import escape

    images = ImageStore(run)
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for e in edits:
        if e["editor"] != NO_EDITOR:
            group = groups[(e["task"], e["editor"])]
            group.append(e)
            if len(group) > per:
                group.sort(key=lambda g: g["id"])
                group.pop()
    blocks = []
    for (task, ed), group in sorted(groups.items()):
        group = sorted(group, key=lambda g: g["id"])
        for e in group:
            v = json.loads(e.get("qc_json") or "{}").get("verification") or {}
            verdict = "verified" if v.get("passed", True) else "failed: " + "; ".join(v.get("failures") or [])
            try:
                figs = (
                    f'<figure><img alt="before" src="{_thumb(images, e["original_image"])}"><figcaption>before</figcaption></figure>'
                    f'<figure><img alt="after" src="{_thumb(images, e["edited_image"])}"><figcaption>after ({escape(e["status"])})</figcaption></figure>'
                )
            except (FileNotFoundError, ValueError) as exc:
                figs = f'<p class="muted">images missing: {escape(str(exc))}</p>'
            blocks.append(
                f"<h3>{escape(task)} / {escape(ed)}</h3><p>{escape(e.get('instruction') or '')}</p>"
                f'<p><b>verdict:</b> {escape(verdict)}</p><div class="thumbs">{figs}</div>'
            )
    return "\n".join(blocks) or '<p class="muted">no edits</p>'


def _funnel_table(eds: list[EditorFigures], reviewed: bool) -> str:
    head = [
        "editor",
        "licence",
        "instructions",
        "supported",
        "edited",
        "auto-QC pass",
        "verified",
        "with questions",
        "accepted" if reviewed else "accepted (not reviewed)",
        "share of instructions kept %",
    ]
    rows = []
    for f in eds:
        n = f.funnel
        rows.append(
            [
                f.editor,
                f.licence
                if f.commercial_use
                else f"{f.licence} ({'non-commercial' if f.commercial_use is False else 'commercial use unknown'})",
                n.instructions,
                n.supported,
                n.edited,
                n.auto_qc_pass,
                n.verified,
                n.with_questions,
                "not reviewed" if n.accepted is None else n.accepted,
                n.share_accepted,
            ]
        )
    return table(head, rows)


def _cost_table(eds: list[EditorFigures]) -> str:
    rows = [
        [
            f.editor,
            significant(f.cost.s_per_edit),
            f.cost.source,
            f.cost.gpus,
            significant(f.cost.s_per_accepted_item),
            significant(f.per_hour),
        ]
        for f in eds
    ]
    return table(
        ["editor", "s / edit", "from", "devices per replica", "device s / kept item", "kept items / device hour"], rows
    )


def _induction_table(eds: list[EditorFigures], models: list[str], names: dict[str, str] | None = None) -> str:
    names = names or {}

    def ci(i: Induction | None) -> str:
        return "n/a" if i is None or i.ci95 is None else f"{i.ci95[0]:+.1f} to {i.ci95[1]:+.1f}"

    rows = []
    for f in eds:
        for label, ind in [
            *[(m, f.induction.get(m)) for m in models],
            *([("all models", f.pooled)] if len(models) > 1 else []),
        ]:
            if ind is None:
                continue
            diff = None if ind.difference is None else f"{ind.difference:+.1f}"
            rows.append(
                [
                    f.editor,
                    names.get(label, label),
                    ind.targeted_items,
                    ind.control_items,
                    ind.targeted_accuracy,
                    ind.control_accuracy,
                    diff,
                    ci(ind),
                ]
            )
    return table(
        [
            "editor",
            "model",
            "targeted items",
            "control items",
            "targeted acc. %",
            "control acc. %",
            "targeted - control (points)",
            "95% interval",
        ],
        rows,
    )


def _verdict_html(summary: dict[str, Any]) -> str:
    from html import escape

    from tasks.release.report.ablation_figures import rank_key

    v = summary["verdict"]
    parts = [f'<p class="verdict"><b>Verdict:</b> {escape(v.text)}</p>']
    ranked = [f for f in summary["editors"] if f.score is not None]
    if ranked:
        parts.append(
            table(
                [
                    "editor",
                    "kept items / device hour",
                    "targeted - control (points, all models)",
                    "95% interval",
                    "kept hallucination-inducing items / device hour",
                    "95% interval",
                ],
                [
                    [
                        f.editor,
                        significant(f.per_hour),
                        f"{f.pooled.difference:+.1f}",
                        f"{f.pooled.ci95[0]:+.1f} to {f.pooled.ci95[1]:+.1f}",
                        significant(f.score),
                        f"{significant(f.score_ci95[0])} to {significant(f.score_ci95[1])}",
                    ]
                    for f in sorted(ranked, key=rank_key)
                ],
            )
        )
    for w in summary["licence_warnings"]:
        parts.append(f'<p class="banner" role="alert">Licence: {escape(w)}</p>')
    u = summary["unedited"]
    if u["items"]:
        parts.append(
            f'<p class="muted">{u["items"]} item(s) of tasks that edit nothing (dense counting) pass through unedited: '
            "they are no editor's and are left out of every comparison below.</p>"
        )
    parts.append(
        '<p class="muted">Kept items: accepted by reviewers once the build is reviewed, else verified edits with questions. '
        "Device hour: an hour of the editor's device (a GPU, or the CPU for CPU editors) times the devices a replica holds. "
        "Hallucination-inducing items per hour: kept items per hour x (control - targeted accuracy) / 100; "
        'intervals from 2,000 bootstrap resamples of items (docs/eval.md, "The editor ablation").</p>'
    )
    return "\n".join(parts)


def render_ablation_report(run: RunFS) -> str:
    from tasks.release.report.ablation_figures import (
        ablation_summary,
        edit_rejects_per_editor,
        seconds_per_editor,
    )

    reader = addresses.EDITS.reader(run)
    if not reader.exists():
        raise NoEdits(
            f"{run.path(addresses.EDITS.folder)}: no edits found; run `{suggest('edit', '--run-dir', run.url)}` first"
        )
    summary = ablation_summary(run)
    accepted = (
        {e["id"] for e in addresses.VERIFIED_EDITS.reader(run).iter_rows(columns=["id"])}
        if summary["reviewed"]
        else None
    )
    unsupported, other = edit_rejects_per_editor(run)
    eds = editor_rows(reader.iter_rows(EDITOR_COLUMNS), accepted, unsupported, other, seconds_per_editor(run))
    figs = summary["editors"]
    down = downstream(run)
    charts = [
        hbars([(f.editor, f.funnel.share_accepted) for f in figs], "Share of instructions kept per editor"),
        hbars([(e["editor"], e["auto_qc_pass"]) for e in eds], "Auto-QC pass rate per editor"),
        hbars([(e["editor"], e["human_acceptance"]) for e in eds], "Human acceptance per editor (of verified edits)"),
    ]
    top_s = max([f.cost.s_per_edit or 0.0 for f in figs] + [1e-9])
    charts.append(
        hbars(
            [(f.editor, f.cost.s_per_edit) for f in figs],
            "Seconds per edit",
            max_value=top_s,
            unit=" s",
            fmt=significant,
        )
    )
    for model, per_editor in sorted(down.items()):
        charts.append(
            hbars(
                [(e["editor"], per_editor.get(e["editor"])) for e in eds],
                f"Accuracy of {folder_label(run, model)} per editor (lower = harder)",
            )
        )
    qc_keys = sorted({k for e in eds for k in e["qc_means"]})
    details = table(
        [
            "editor",
            "supported",
            "unsupported",
            "verified",
            "failed verification",
            "edits",
            "auto-QC pass %",
            "human acceptance %",
            *[f"mean {k}" for k in qc_keys],
            *[f"acc. {folder_label(run, m)}" for m in sorted(down)],
        ],
        [
            [
                e["editor"],
                e["supported"],
                e["unsupported"],
                e["verified"],
                e["failed_verification"],
                e["edits"],
                e["auto_qc_pass"],
                e["human_acceptance"],
                *[e["qc_means"].get(k) for k in qc_keys],
                *[down[m].get(e["editor"]) for m in sorted(down)],
            ]
            for e in eds
        ],
    )
    induction = (
        _induction_table(figs, summary["models"], {m: folder_label(run, m) for m in summary["models"]})
        if summary["models"]
        else f'<p class="muted">No evaluation yet: run `{suggest("eval", "--run-dir", run.url)}` (and build with mine.control: true for control items).</p>'
    )
    sections = [
        ("Which editor", _verdict_html(summary)),
        ("Yield: from instruction to kept item", _funnel_table(figs, summary["reviewed"])),
        ("Cost per kept item", _cost_table(figs)),
        ("Hallucination induction: targeted minus control accuracy", induction),
        ("Editors in detail", details + '<div class="charts">' + "".join(figure(c) for c in charts) + "</div>"),
        ("Side by side", thumbnails(run, reader.iter_shared_rows(PICTURE_COLUMNS))),
        ("Verification gallery", gallery(run, reader.iter_rows(GALLERY_COLUMNS))),
    ]
    note = (
        None
        if summary["reviewed"]
        else "Human acceptance: not reviewed yet (no review/verified_edits); kept items are verified edits with questions."
    )
    return page("Editor ablation", sections, banner=note, subtitle=f"run {run.url}")

"""``reactbench report ablation``: editors side by side on the same instructions.

Per editor: auto-QC pass rate, the mean of every numeric auto-QC metric (preservation,
change, ...), human acceptance (verified builds), downstream accuracy of each evaluated
model on that editor's questions (lower = a harder benchmark), seconds per image, and
thumbnails of the same instructions edited by each editor.
"""

from __future__ import annotations

import base64
import io
import json
from collections import defaultdict
from typing import Any, Iterable, Mapping

from storage import addresses
from storage.fs import RunFS
from storage.image_store import ImageStore
from storage.parquet_io import ArtifactReader
from storage.stage_store import StageStore
from tasks.release.metrics import accuracy
from tasks.release.evaluate.schemas import ANSWERS
from tasks.release.evaluate.run import list_evaluations
from tasks.release.report.html import figure, page, table
from tasks.release.report.svg import hbars
from tasks.engine.suggest import suggest


class NoEdits(RuntimeError):
    """The run has no ``edit/edits`` to compare."""


def edit_rejects_per_editor(run: RunFS) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """Per editor: requests refused as ``unsupported_edit`` (outside its capabilities), and the other
    edit-stage rejects by reason (``verify_failed`` excluded: those edits are rows too)."""
    reader = addresses.rejects("edit").reader(run)
    unsupported: dict[str, int] = defaultdict(int)
    other: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    if reader.exists():
        for r in reader.iter_rows(columns=["reason", "payload_json"]):
            ed = json.loads(r.get("payload_json") or "{}").get("editor")
            if ed is None or r["reason"] == "verify_failed":
                continue
            if r["reason"] in ("unsupported_edit", "unsupported_edit_type"):
                unsupported[ed] += 1
            else:
                other[ed][r["reason"]] += 1
    return dict(unsupported), {k: dict(v) for k, v in other.items()}


def seconds_per_editor(run: RunFS) -> dict[str, float]:
    """Per editor key: editor wall seconds per computed item, from the edit manifest's timing record
    (tasks/stages/edit.py ``timing_record``: kept for every build, outside the rows so they stay byte-identical)."""
    from tasks.stages.edit import EditStage

    manifest = StageStore(run, "edit", EditStage.outputs).read_manifest() or {}
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for rec in ((manifest.get("extra") or {}).get("timings") or {}).values():
        totals[rec["key"]][0] += rec["seconds"]
        totals[rec["key"]][1] += rec["items"]
    return {k: s / n for k, (s, n) in totals.items() if n}


# What each part of the report reads of an edit row (the candidate and instruction JSON stay on disk).
EDITOR_COLUMNS = ["id", "editor", "status", "qc_json", "edit_seconds"]
PICTURE_COLUMNS = ["id", "instruction_id", "task", "instruction", "editor", "status", "original_image", "edited_image"]
GALLERY_COLUMNS = [*PICTURE_COLUMNS, "qc_json"]


def editor_rows(edits: Iterable[Mapping[str, Any]], accepted: set[str] | None, unsupported: dict[str, int] | None = None,
                other_rejects: dict[str, dict[str, int]] | None = None, seconds: dict[str, float] | None = None) -> list[dict[str, Any]]:
    """One summary dict per editor (sorted by name): supported requests (performed or failed while
    trying), unsupported ones, verified and failed verification, auto-QC, acceptance, timing (the
    rows' ``edit_seconds`` when ``edit.record_timings`` kept them, else ``seconds``: the manifest's record).
    One pass over ``edits`` (``EDITOR_COLUMNS`` of each), which may be a stream: nothing is kept per edit."""
    sums: dict[str, dict[str, Any]] = defaultdict(lambda: {"edits": 0, "passed": 0, "accepted": 0, "verified": 0, "secs": [0, 0.0], "qc": defaultdict(lambda: [0, 0.0])})
    for e in edits:
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
                "human_acceptance": (100.0 * acc["accepted"] / passed if passed else None) if accepted is not None else None,
                "seconds_per_image": acc["secs"][1] / acc["secs"][0] if acc["secs"][0] else (seconds or {}).get(ed),
                "qc_means": {k: total / count for k, (count, total) in sorted(acc["qc"].items())},
            }
        )
    return out


def downstream(run: RunFS) -> dict[str, dict[str, float | None]]:
    """Per evaluated model: main-set accuracy per editor (both modes pooled)."""
    out: dict[str, dict[str, float | None]] = {}
    for folder in list_evaluations(run):
        answers = ArtifactReader(run, f"{folder}/answers", ANSWERS).iter_rows(["question_set", "status", "editor", "correct"])
        rows = (r for r in answers if r["question_set"] == "main" and r["status"] != "error")  # counted as they stream by
        out[folder.split("/", 1)[1]] = {a["editor"]: a["accuracy"] for a in accuracy(rows, ["editor"])}
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
        by_instr[e["instruction_id"]].append(e)
    chosen = sorted(by_instr.items(), key=lambda kv: (-len({e["editor"] for e in kv[1]}), kv[0]))[:limit]
    blocks = []
    for instr, group in chosen:
        group = sorted(group, key=lambda e: e["editor"])
        figs = []
        try:
            figs.append(f'<figure><img alt="original" src="{_thumb(images, group[0]["original_image"])}"><figcaption>original</figcaption></figure>')
            for e in group:
                figs.append(f'<figure><img alt="{escape(e["editor"])}" src="{_thumb(images, e["edited_image"])}"><figcaption>{escape(e["editor"])} ({escape(e["status"])})</figcaption></figure>')
        except (FileNotFoundError, ValueError) as exc:
            figs.append(f'<p class="muted">images missing: {escape(str(exc))}</p>')
        blocks.append(f'<h3>{escape(group[0]["task"])}: {escape(group[0].get("instruction") or instr)}</h3><div class="thumbs">{"".join(figs)}</div>')
    return "\n".join(blocks)


def gallery(run: RunFS, edits: Iterable[Mapping[str, Any]], per: int = 2) -> str:
    """Before / after thumbnails with the instruction and the verification verdict: a sample of
    ``per`` edits per (task, editor) (the lowest ids), so an author sees what each editor really
    does. One pass over ``edits`` (``GALLERY_COLUMNS``), which may be a stream: only the sample is kept."""
    from html import escape

    images = ImageStore(run)
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for e in edits:
        if e["editor"] != "none":
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
                figs = (f'<figure><img alt="before" src="{_thumb(images, e["original_image"])}"><figcaption>before</figcaption></figure>'
                        f'<figure><img alt="after" src="{_thumb(images, e["edited_image"])}"><figcaption>after ({escape(e["status"])})</figcaption></figure>')
            except (FileNotFoundError, ValueError) as exc:
                figs = f'<p class="muted">images missing: {escape(str(exc))}</p>'
            blocks.append(f'<h3>{escape(task)} / {escape(ed)}</h3><p>{escape(e.get("instruction") or "")}</p>'
                          f'<p><b>verdict:</b> {escape(verdict)}</p><div class="thumbs">{figs}</div>')
    return "\n".join(blocks) or '<p class="muted">no edits</p>'


def render_ablation_report(run: RunFS) -> str:
    reader = addresses.EDITS.reader(run)
    if not reader.exists():
        raise NoEdits(f"{run.path(addresses.EDITS.folder)}: no edits found; run `{suggest('edit', '--run-dir', run.url)}` first")
    vreader = addresses.VERIFIED_EDITS.reader(run)
    if vreader.exists():
        from tasks.review.export_set import require_export_set

        require_export_set(run, ("verified_edits",))  # never half of an interrupted export
    accepted = {e["id"] for e in vreader.iter_rows(columns=["id"])} if vreader.exists() else None
    unsupported, other = edit_rejects_per_editor(run)
    eds = editor_rows(reader.iter_rows(EDITOR_COLUMNS), accepted, unsupported, other, seconds_per_editor(run))
    down = downstream(run)
    charts = [
        hbars([(e["editor"], e["auto_qc_pass"]) for e in eds], "Auto-QC pass rate per editor"),
        hbars([(e["editor"], e["human_acceptance"]) for e in eds], "Human acceptance per editor (of auto-QC passes)"),
    ]
    top_s = max([e["seconds_per_image"] or 0.0 for e in eds] + [1e-9])
    charts.append(hbars([(e["editor"], e["seconds_per_image"]) for e in eds], "Seconds per image", max_value=top_s, unit=" s"))
    for model, per_editor in sorted(down.items()):
        charts.append(hbars([(e["editor"], per_editor.get(e["editor"])) for e in eds], f"Accuracy of {model} per editor (lower = harder)"))
    qc_keys = sorted({k for e in eds for k in e["qc_means"]})
    summary = table(
        ["editor", "supported", "unsupported", "verified", "failed verification", "edits", "auto-QC pass %", "human acceptance %", "s / image",
         *[f"mean {k}" for k in qc_keys], *[f"acc. {m}" for m in sorted(down)]],
        [
            [e["editor"], e["supported"], e["unsupported"], e["verified"], e["failed_verification"], e["edits"], e["auto_qc_pass"], e["human_acceptance"], e["seconds_per_image"], *[e["qc_means"].get(k) for k in qc_keys], *[down[m].get(e["editor"]) for m in sorted(down)]]
            for e in eds
        ],
    )
    sections = [
        ("Editors", summary + '<div class="charts">' + "".join(figure(c) for c in charts) + "</div>"),
        ("Side by side", thumbnails(run, reader.iter_shared_rows(PICTURE_COLUMNS))),
        ("Verification gallery", gallery(run, reader.iter_rows(GALLERY_COLUMNS))),
    ]
    note = None if accepted is not None else "Human acceptance: not reviewed yet (no review/verified_edits)."
    return page("Editor ablation", sections, banner=note, subtitle=f"run {run.url}")

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
from typing import Any

from storage import addresses
from storage.fs import RunFS
from storage.image_store import ImageStore
from storage.parquet_io import ArtifactReader
from tasks.evaluate.metrics import accuracy
from tasks.evaluate.schemas import ANSWERS
from tasks.evaluate.run import list_evaluations
from tasks.report.html import figure, page, table
from tasks.report.svg import hbars


class NoEdits(RuntimeError):
    """The run has no ``edit/edits`` to compare."""


def editor_rows(edits: list[dict[str, Any]], accepted: set[str] | None) -> list[dict[str, Any]]:
    """One summary dict per editor (sorted by name)."""
    out = []
    for ed in sorted({e["editor"] for e in edits}):
        mine = [e for e in edits if e["editor"] == ed]
        passed = [e for e in mine if e["status"] == "ok"]
        qc: dict[str, list[float]] = defaultdict(list)
        for e in mine:
            for k, v in json.loads(e.get("qc_json") or "{}").items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    qc[k].append(float(v))
        secs = [e["edit_seconds"] for e in mine if e.get("edit_seconds") is not None]
        out.append(
            {
                "editor": ed,
                "edits": len(mine),
                "auto_qc_pass": 100.0 * len(passed) / len(mine) if mine else None,
                "human_acceptance": (100.0 * sum(1 for e in passed if e["id"] in accepted) / len(passed) if passed else None) if accepted is not None else None,
                "seconds_per_image": sum(secs) / len(secs) if secs else None,
                "qc_means": {k: sum(v) / len(v) for k, v in sorted(qc.items())},
            }
        )
    return out


def downstream(run: RunFS) -> dict[str, dict[str, float | None]]:
    """Per evaluated model: main-set accuracy per editor (both modes pooled)."""
    out: dict[str, dict[str, float | None]] = {}
    for folder in list_evaluations(run):
        rows = [r for r in ArtifactReader(run, f"{folder}/answers", ANSWERS).rows() if r["question_set"] == "main" and r["status"] != "error"]
        out[folder.split("/", 1)[1]] = {a["editor"]: a["accuracy"] for a in accuracy(rows, ["editor"])}
    return out


def _thumb(images: ImageStore, rel: str, width: int = 160) -> str:
    from PIL import Image

    im = Image.open(io.BytesIO(images.get_bytes(rel))).convert("RGB")
    h = max(1, round(im.height * width / im.width))
    buf = io.BytesIO()
    im.resize((width, h)).save(buf, format="JPEG", quality=80)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def thumbnails(run: RunFS, edits: list[dict[str, Any]], limit: int = 6) -> str:
    """Original + each editor's result for the first ``limit`` instructions (most editors first)."""
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


def render_ablation_report(run: RunFS) -> str:
    reader = addresses.EDITS.reader(run)
    if not reader.exists():
        raise NoEdits(f"{run.path(addresses.EDITS.folder)}: no edits found; run `reactbench edit --run-dir {run.url}` first")
    edits = reader.rows()
    vreader = addresses.VERIFIED_EDITS.reader(run)
    if vreader.exists():
        from tasks.review.export_set import require_export_set

        require_export_set(run, ("verified_edits",))  # never half of an interrupted export
    accepted = {e["id"] for e in vreader.rows(columns=["id"])} if vreader.exists() else None
    eds = editor_rows(edits, accepted)
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
        ["editor", "edits", "auto-QC pass %", "human acceptance %", "s / image", *[f"mean {k}" for k in qc_keys], *[f"acc. {m}" for m in sorted(down)]],
        [
            [e["editor"], e["edits"], e["auto_qc_pass"], e["human_acceptance"], e["seconds_per_image"], *[e["qc_means"].get(k) for k in qc_keys], *[down[m].get(e["editor"]) for m in sorted(down)]]
            for e in eds
        ],
    )
    sections = [
        ("Editors", summary + '<div class="charts">' + "".join(figure(c) for c in charts) + "</div>"),
        ("Side by side", thumbnails(run, edits)),
    ]
    note = None if accepted is not None else "Human acceptance: not reviewed yet (no review/verified_edits)."
    return page("Editor ablation", sections, banner=note, subtitle=f"run {run.url}")

"""``reactbench export``: a verified (or, labelled, unverified) build -> a release folder.

The release is one sealed set (``tasks.release.export.seal``): written aside, listed with every file's
sha256 in ``release_manifest.json``, swapped in whole, so ``--out`` holds the old release or the
new one at every instant and never a mix. The CLI holds the run's lease meanwhile, so the
inputs cannot change under the export and its rejects are written by the lease holder.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from rich.progress import Progress

from storage import addresses
from storage.fs import RunFS
from storage.image_store import ImageStore
from storage.parquet_io import table_from_rows, write_table
from storage.rejects import reject
from tasks.release.items import edit_annotations, read_inputs
from tasks.release.export.card import editor_stats, render_card
from tasks.release.export.hf import write_task_parquet
from tasks.release.export.lmms_eval import write_lmms_eval
from tasks.release.export.seal import MANIFEST, ReleaseRefused, check_target, sealed_release
from tasks.release.export.vlmevalkit import write_vlmevalkit

STAGE = "export"


@dataclass
class ExportSummary:
    out: str
    verified: bool
    counts: dict[str, int]
    rejected: int
    files: list[str] = field(default_factory=list)


def build_mllm_ids(run: RunFS, config: Any) -> list[str]:
    """``backend:model`` of every model that wrote instructions or analyses, else the configured one
    (``config``: the resolved run config, ``flows.config.BuildConfig``)."""
    ids: set[str] = set()
    for address in (addresses.INSTRUCTIONS, addresses.ANALYSIS):
        reader = address.reader(run)
        if reader.exists():
            for r in reader.rows(columns=["backend", "model_id"]):
                if r["backend"] and r["model_id"]:
                    ids.add(f"{r['backend']}:{r['model_id']}")
    if not ids and config.mllm.backend:
        ids.add(f"{config.mllm.backend}:{config.mllm.model}")
    return sorted(ids)


def export_benchmark(
    run: RunFS,
    out: RunFS,
    config: Any,
    *,
    unverified: bool = False,
    vlmevalkit: bool = False,
    lmms_eval: bool = False,
    name: str = "ReactBench-style hallucination benchmark",
    replace: bool = False,
) -> ExportSummary:
    """Write the ``datasets`` folder (and optional TSV / lmms-eval files) to ``out`` as one sealed set.

    ``config`` is the resolved run config (``flows.config.resolve_run_config``): every setting the
    export reads comes from it, never from a second read of the run's ``config.yaml``.

    A question whose image is missing from the store is not released; it becomes a reject row
    in ``<run>/export/rejects/`` (reason ``image_missing``) and the card counts only what shipped.
    ``out`` holding anything but an older version of this release (or a release with tasks or
    formats this one lacks) raises :class:`tasks.release.export.seal.ReleaseRefused` unless ``replace``.
    """
    if out.protocol == run.protocol and (run.root + "/").startswith(out.root.rstrip("/") + "/"):
        raise ReleaseRefused(f"--out {out.url} is the run directory {run.url} or holds it; choose a folder of its own for the release")
    check_target(out, replace)  # before the work: a folder that is no release is refused at once
    questions, kept_edits = read_inputs(run, unverified)
    annotations = edit_annotations(questions, kept_edits)
    images = ImageStore(run)
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    rejects: list[dict[str, Any]] = []
    with Progress(transient=True) as bar:
        job = bar.add_task("export", total=len(questions))
        for q in questions:
            try:
                by_task[q["task"]].append(_row(q, kept_edits, images, not unverified, annotations))
            except (FileNotFoundError, ValueError) as exc:
                rejects.append(reject(q["id"], STAGE, "image_missing", f"question {q['id']}: {exc}", {"images": q["images"]}))
            bar.advance(job)
    counts = {t: len(r) for t, r in sorted(by_task.items())}
    extra = {"counts": counts, "verified": not unverified, "rejected": len(rejects)}
    with sealed_release(out, replace=replace, extra=extra) as stage:
        files = _write_release(run, stage, config, by_task, kept_edits, unverified, name, vlmevalkit=vlmevalkit, lmms_eval=lmms_eval)
    # after the swap: a refused or failed export records nothing in the run
    rejects_at = addresses.rejects(STAGE)
    write_table(run, f"{rejects_at.folder}/part-00000.parquet", table_from_rows(rejects_at.schema, rejects, where=rejects_at.folder))
    files.append(MANIFEST)
    return ExportSummary(out.url, not unverified, counts, len(rejects), files)


def _write_release(
    run: RunFS,
    out: RunFS,
    config: Any,
    by_task: dict[str, list[dict[str, Any]]],
    kept_edits: dict[str, dict[str, Any]],
    unverified: bool,
    name: str,
    *,
    vlmevalkit: bool,
    lmms_eval: bool,
) -> list[str]:
    """Every file of the release into ``out`` (the staging folder); returns their paths."""
    files = [write_task_parquet(out, t, rows) for t, rows in sorted(by_task.items())]
    all_rows = [r for t in sorted(by_task) for r in sorted(by_task[t], key=lambda r: r["id"])]
    edit_reader = addresses.EDITS.reader(run)
    all_edits = edit_reader.rows() if edit_reader.exists() else list(kept_edits.values())
    card = render_card(
        name,
        all_rows,
        editor_stats(all_edits, set(kept_edits), verified=not unverified),
        build_mllm_ids(run, config),
        run.read_text(addresses.CONFIG_FILE) if run.exists(addresses.CONFIG_FILE) else None,
        verified=not unverified,
        vlmevalkit=vlmevalkit,
    )
    out.write_text_atomic("README.md", card)
    files.append("README.md")
    if vlmevalkit:
        files += write_vlmevalkit(out, all_rows)
    if lmms_eval:
        files += write_lmms_eval(out, sorted(by_task), config.eval.temperature, config.eval.max_tokens)
    return files


def _row(q: dict[str, Any], edits: dict[str, dict[str, Any]], images: ImageStore, verified: bool, annotations: dict[str, dict[str, Any]]) -> dict[str, Any]:
    from tasks.release.export.rows import release_row

    prior = list(annotations.get(q["edit_id"], {}).get("prior_terms") or [])
    return release_row(q, edits.get(q["edit_id"]), images, verified, prior)

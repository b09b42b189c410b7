"""``reactbench export``: a verified (or, labelled, unverified) build -> a release folder.

The release is one sealed set (``tasks.release.export.seal``): written aside, listed with every file's
sha256 in ``release_manifest.json``, swapped in whole, so ``--out`` holds the old release or the
new one at every instant and never a mix. The CLI holds the run's lease meanwhile, so the
inputs cannot change under the export and its rejects are written by the lease holder.

Memory does not grow with the benchmark's images: the rows are built from the questions' text
(image names only), and the Parquet files and VLMEvalKit TSVs are written one row group at a
time, reading the images of that group only (``tasks.release.export.hf.row_groups``).
"""

from __future__ import annotations

from collections import defaultdict
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from storage import addresses
from storage.fs import RunFS
from storage.image_store import ImageStore
from storage.literal_paths import read_only_reason
from storage.parquet_io import table_from_rows, write_table
from storage.rejects import reject
from storage.run_dirs import refuse_release_target
from tasks.engine.build_config import BuildConfig
from tasks.engine.intact import require_intact
from tasks.engine.progress import StepProgress, no_progress
from tasks.release.export.canary import canary_guid, canary_string
from tasks.release.export.card import editor_stats, render_card
from tasks.release.export.content import ReleaseContent
from tasks.release.export.datasheet import DEFAULT_NAME
from tasks.release.export.diff import Release, changelog, diff_releases, load_release
from tasks.release.export.front_matter import front_matter
from tasks.release.export.hf import data_file, row_groups, task_parquet
from tasks.release.export.lmms_eval import hub_source, write_lmms_eval
from tasks.release.export.metadata import write_metadata
from tasks.release.export.rows import ReleaseRow, image_rels, release_row, with_bytes
from tasks.release.export.seal import MANIFEST, check_target, recover, release_lock, sealed_release
from tasks.release.export.versions import CHANGELOG, card_lines, check_version, item_entry, not_released, write_index
from tasks.release.export.vlmevalkit import write_vlmevalkit
from tasks.release.health.figures import health_biases_text, release_health
from tasks.release.items import edit_annotations, read_inputs

STAGE = "export"
READS = ("instruct", "edit", "qa")  # model ids, the card's editor statistics, unverified questions


@dataclass
class ExportSummary:
    out: str
    verified: bool
    counts: dict[str, int]
    rejected: int
    files: list[str] = field(default_factory=list)
    health_warnings: list[str] = field(default_factory=list)  # figures over a ``health:`` threshold
    warnings: list[str] = field(default_factory=list)


def build_mllm_ids(run: RunFS, config: BuildConfig) -> list[str]:
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


@dataclass(frozen=True)
class ExportOptions:
    """The choices of one export (the CLI's flags), carried together from the CLI to the writers.

    ``unverified``: release ``qa/questions`` unreviewed (labelled so); ``vlmevalkit`` / ``lmms_eval``:
    add those formats' files; ``name``: the release's name when ``datasheet.name`` is empty;
    ``replace``: allow replacing a release with tasks or formats this one lacks; ``strict``: refuse
    a build over a ``health:`` threshold."""

    unverified: bool = False
    vlmevalkit: bool = False
    lmms_eval: bool = False
    name: str = DEFAULT_NAME
    replace: bool = False
    strict: bool = False


@dataclass
class _Planned:
    """What the export read and decided before writing anything: the released rows' row groups per
    task, the image sizes, the edits kept, the items not released (id -> why), the health figures,
    the release's name and its canary GUID."""

    plan: dict[str, list[list[ReleaseRow]]]
    sizes: dict[str, int]
    kept_edits: dict[str, dict[str, Any]]
    dropped: dict[str, str]
    health: dict[str, Any]
    name: str
    guid: str


def export_benchmark(
    run: RunFS,
    out: RunFS,
    config: BuildConfig,
    options: ExportOptions = ExportOptions(),
    *,
    progress: StepProgress = no_progress,
    previous: str | None = None,
) -> ExportSummary:
    """Write the ``datasets`` folder (and optional TSV / lmms-eval files) to ``out`` as one sealed set.

    ``config`` is the resolved run config (``flows.config.resolve_run_config``): every setting the
    export reads comes from it, never from a second read of the run's ``config.yaml``.

    A question whose image is missing from the store is not released; it becomes a reject row
    in ``<run>/export/rejects/`` (reason ``image_missing``) and the card counts only what shipped.
    ``out`` is resolved first (``storage.run_dirs``): one that is, holds or lies inside a run directory
    raises :class:`storage.run_dirs.InsideRunDir`. ``out`` holding anything but an older version of
    this release (or a release with tasks or formats this one lacks, which ``options.replace`` allows)
    raises :class:`tasks.release.export.seal.ReleaseRefused`.
    ``progress`` sees the steps ``read`` (questions), ``write`` (rows) and ``seal`` (bytes hashed).
    The health figures (``tasks.release.health``) go into the card; ``options.strict`` refuses a build
    over a ``health:`` threshold (:class:`tasks.release.health.gate.HealthRefused`, before anything is
    written), else the figures over one are returned as ``health_warnings``.
    The release's version is ``config.export.version``; ``previous`` (a release folder or URL, read
    before anything is written, so it may be ``out`` itself) adds ``CHANGELOG.md``: the diff from it.
    """
    check_version(config.export.version)
    hub_source(config.export)  # a revision without a repo is refused before anything is written
    old = load_release(previous) if previous else None
    out = refuse_release_target(out, run)  # resolved: never a run directory, nor inside or above one
    with release_lock(out):  # one writer of the release at a time
        recover(out)  # what a killed export left: the old release put back, temporary folders removed
        check_target(out, options.replace)  # before the work: a folder that is no release is refused at once
        return _export_locked(run, out, config, options, progress, old)


def _export_locked(
    run: RunFS,
    out: RunFS,
    config: BuildConfig,
    options: ExportOptions,
    progress: StepProgress,
    previous: Release | None = None,
) -> ExportSummary:
    """The export proper, once ``out`` (resolved) is locked, recovered and checked."""
    unverified = options.unverified
    progress("read", 0, None)
    require_intact(run, READS)  # every stage it reads, verified or not: sizes and sha256
    name = config.datasheet.name or options.name
    guid = canary_guid(name, config.datasheet.canary_guid)
    questions, kept_edits = read_inputs(run, unverified)
    health = release_health(run, config, unverified, options.strict)  # refuses (strict) before anything is written
    annotations = edit_annotations(questions, kept_edits)
    sizes = ImageStore(run).sizes()
    by_task: dict[str, list[ReleaseRow]] = defaultdict(list)
    rejects: list[dict[str, Any]] = []
    for q in questions:
        missing = [rel for rel in q["images"] if rel not in sizes]
        if missing or not q["images"]:
            why = f"{missing[0]} is not in the run's image store" if missing else "it names no image"
            rejects.append(
                reject(q["id"], STAGE, "image_missing", f"question {q['id']}: {why}", {"images": q["images"]})
            )
            continue
        prior = list(annotations.get(q["edit_id"], {}).get("prior_terms") or [])
        by_task[q["task"]].append(release_row(q, kept_edits.get(q["edit_id"]), not unverified, prior))
    del questions, annotations
    counts = {t: len(r) for t, r in sorted(by_task.items())}
    plan = {t: row_groups(rows, sizes) for t, rows in sorted(by_task.items())}
    progress(
        "read",
        1,
        1,
        f"read {sum(counts.values()):,} questions of {len(counts)} task(s) ({len(rejects)} rejected: image missing)",
    )
    extra = {
        "canary": canary_string(guid),
        "counts": counts,
        "verified": not unverified,
        "rejected": len(rejects),
        "version": config.export.version,
    }
    released = {r["id"] for rows in by_task.values() for r in rows}
    dropped = not_released(run, released, unverified, rejects)
    planned = _Planned(plan, sizes, kept_edits, dropped, health, name, guid)
    with sealed_release(out, replace=options.replace, extra=extra, progress=progress) as stage:
        files, warnings = _write_release(run, stage, config, options, planned, progress, previous, out.url)
    # after the swap: a refused or failed export records nothing in the run
    rejects_at = addresses.rejects(STAGE)
    if read_only_reason(run.url) is None:  # a run mounted read-only is exported without a record in it
        write_table(
            run,
            f"{rejects_at.folder}/part-00000.parquet",
            table_from_rows(rejects_at.schema, rejects, where=rejects_at.folder),
        )
    files.append(MANIFEST)
    return ExportSummary(out.url, not unverified, counts, len(rejects), files, health["problems"], warnings)


def _write_release(
    run: RunFS,
    out: RunFS,
    config: BuildConfig,
    options: ExportOptions,
    planned: _Planned,
    progress: StepProgress,
    previous: Release | None = None,
    release_url: str = "",
) -> tuple[list[str], list[str]]:
    """Every file of the release into ``out`` (the staging folder; ``release_url`` is where it goes);
    returns their paths and the metadata's warnings."""
    version = config.export.version
    verified = not options.unverified
    plan, dropped = planned.plan, planned.dropped
    all_rows = [r for t in sorted(plan) for group in plan[t] for r in group]  # release order, text only
    tsv_rows = all_rows if options.vlmevalkit else None
    files = _write_rows(run, out, plan, planned.sizes, tsv_rows, progress, planned.guid, version)
    files.append(write_index(out, all_rows, dropped))
    changes = None
    if previous is not None:
        entries = {e["id"]: e for e in map(item_entry, all_rows)}
        changes = diff_releases(previous, Release(release_url or out.url, version, entries, dropped))
        out.write_text_atomic(CHANGELOG, changelog(changes))
        files.append(CHANGELOG)
    edit_reader = addresses.EDITS.reader(run)
    all_edits = edit_reader.rows() if edit_reader.exists() else list(planned.kept_edits.values())
    editors = editor_stats(all_edits, set(planned.kept_edits), verified=verified)
    content = ReleaseContent(
        planned.name, all_rows, editors, verified, planned.guid, [health_biases_text(planned.health)]
    )
    card = render_card(
        content,
        build_mllm_ids(run, config),
        run.read_text(addresses.CONFIG_FILE) if run.exists(addresses.CONFIG_FILE) else None,
        vlmevalkit=options.vlmevalkit,
        health=planned.health,
        extra_header=front_matter(all_rows, editors, verified),
    )
    card += "\n" + "\n".join(
        card_lines(version, previous.label if previous else None, changes.summary() if changes else None)
    )
    out.write_text_atomic("README.md", card)
    files.append("README.md")
    if options.lmms_eval:
        files += write_lmms_eval(
            out, sorted(plan), config.eval.temperature, config.eval.max_tokens, hub_source(config.export)
        )
    added, warnings = write_metadata(run, out, config, files, content)
    return files + added, warnings


def _write_rows(
    run: RunFS,
    out: RunFS,
    plan: dict[str, list[list[ReleaseRow]]],
    sizes: dict[str, int],
    tsv_rows: list[ReleaseRow] | None,
    progress: StepProgress,
    canary: str | None = None,
    version: str | None = None,
) -> list[str]:
    """The Parquet file of every task (and the VLMEvalKit TSVs for ``tsv_rows``), one row group at a
    time: each group's images are read once, written, and let go."""
    total = sum(len(g) for groups in plan.values() for g in groups)
    done, images = 0, set[str]()
    progress("write", 0, total)
    files: list[str] = []
    with ExitStack() as stack:
        tsvs = (
            stack.enter_context(write_vlmevalkit(out, tsv_rows, canary=canary, version=version))
            if tsv_rows is not None
            else None
        )
        for task, groups in plan.items():
            with task_parquet(out, task) as write_group:
                for group in groups:
                    blobs = _read_images(run, group)
                    write_group([with_bytes(r, blobs) for r in group])
                    if tsvs is not None:
                        tsvs.add(group, blobs)
                    images.update(blobs)
                    done += len(group)
                    progress("write", done, total)
            files.append(data_file(task))
    if tsvs is not None:
        files += tsvs.files
    unique_mb = sum(sizes[rel] for rel in images) / 1e6
    parquet_mb = sum(out.fs.size(out.path(f)) for f in files if f.endswith(".parquet")) / 1e6
    tsv_note = (
        f"; {sum(f.endswith('.tsv') for f in tsvs.files)} VLMEvalKit TSVs" if tsvs is not None and tsvs.files else ""
    )
    progress(
        "write",
        total,
        total,
        f"wrote {total:,} questions ({len(images):,} images, {unique_mb:,.1f} MB) as {parquet_mb:,.1f} MB of Parquet{tsv_note}",
    )
    return files


def _read_images(run: RunFS, group: list[ReleaseRow]) -> dict[str, bytes]:
    """The bytes of a row group's images by image-store path (one concurrent round on an object store)."""
    wanted = sorted({rel for r in group for rel in image_rels(r)})
    blobs = run.read_many(wanted)
    lost = [rel for rel in wanted if rel not in blobs]
    if lost:
        who = next(r["id"] for r in group if lost[0] in image_rels(r))
        raise FileNotFoundError(
            f"{run.path(lost[0])}: image of question {who} vanished from the run's image store during the export"
        )
    return blobs

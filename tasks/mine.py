"""The ``mine`` stage: source annotations -> candidates, pair statistics, attribute statistics.

Mining is a whole-dataset computation (counts over every image), so the stage plans one
work unit per source (Visual Genome for RE/CA/AT, FSC147 for DC) rather than shards of
images; each unit streams its files once (see ``miners/``). The stage key covers the
``mine`` and ``sources`` config sections, the run seed, and the source files' path, size
and modification time, so editing a threshold or replacing a file re-mines.
"""

from __future__ import annotations

import posixpath
import sys
from typing import Any

from miners.fsc147 import ANNOTATIONS, CLASSES, SPLITS
from miners.mine import VG_TASKS, MineResult, mine_fsc147, mine_visual_genome, vg_files
from storage import addresses
from tasks.base import RunContext, ShardResult, Stage, StageInputError

STAGE = "mine"


class MineSourceMissing(StageInputError):
    """A task was asked for whose source folder is not configured or lacks its annotation files."""


def _needed_sources(ctx: RunContext) -> list[dict[str, str]]:
    cfg = ctx.config
    units = []
    vg_tasks = [t for t in cfg.mine.tasks if t in VG_TASKS]
    if vg_tasks:
        if not cfg.sources.visual_genome:
            raise MineSourceMissing(f"mine.tasks {vg_tasks} need sources.visual_genome (a folder with image_data.json, objects.json, ...)")
        units.append({"source": "visual_genome", "root": str(cfg.sources.visual_genome)})
    if "dense_counting" in cfg.mine.tasks:
        if not cfg.sources.fsc147:
            raise MineSourceMissing("mine.tasks [dense_counting] needs sources.fsc147 (a folder with annotation_FSC147_384.json, ...)")
        units.append({"source": "fsc147", "root": str(cfg.sources.fsc147)})
    return units


def source_files(ctx: RunContext) -> list[str]:
    """The annotation files the stage reads (images are checked per candidate, not fingerprinted)."""
    files: list[str] = []
    for unit in _needed_sources(ctx):
        root = unit["root"].rstrip("/")
        if unit["source"] == "visual_genome":
            files += list(vg_files(root).values())
            files += [posixpath.join(root, "object_alias.txt"), posixpath.join(root, "relationship_alias.txt")]
            files += [p for p in (ctx.config.mine.object_alias, ctx.config.mine.relationship_alias) if p]
        else:
            files += [posixpath.join(root, n) for n in (ANNOTATIONS, CLASSES, SPLITS)]
    return files


def required_files(ctx: RunContext) -> list[str]:
    """The files mining cannot start without (alias files are optional)."""
    files: list[str] = []
    for unit in _needed_sources(ctx):
        root = unit["root"].rstrip("/")
        if unit["source"] == "visual_genome":
            files += [vg_files(root)[k] for k in ("image_data", "objects")]
        else:
            files += [posixpath.join(root, n) for n in (ANNOTATIONS, CLASSES, SPLITS)]
    return files


def _fingerprint(path: str) -> str:
    import fsspec

    fs, p = fsspec.core.url_to_fs(path)
    if not fs.exists(p):
        return "absent"
    info = fs.info(p)
    mtime = info.get("mtime") or info.get("LastModified") or info.get("created") or ""
    return f"size={info.get('size')};mtime={mtime}"


class MineStage(Stage):
    name = STAGE
    outputs = addresses.outputs(addresses.CANDIDATES, addresses.PAIR_STATS, addresses.ATTRIBUTE_STATS)
    upstream = ()

    def config_section(self, ctx: RunContext) -> Any:
        return {
            "mine": ctx.config.mine.model_dump(mode="json"),
            "sources": ctx.config.sources.model_dump(mode="json"),
            "seed": ctx.seed,
        }

    def input_fingerprints(self, ctx: RunContext) -> dict[str, str]:
        fps = {path: _fingerprint(path) for path in source_files(ctx)}
        missing = [p for p in required_files(ctx) if fps.get(p) == "absent"]
        if missing:
            raise MineSourceMissing(
                "source annotation files not found: " + ", ".join(missing) + " (check sources.visual_genome / sources.fsc147; "
                "relative paths are read from the current folder; `reactbench sample-data data/sample` writes the demo data)"
            )
        return fps

    def plan(self, ctx: RunContext) -> list[Any]:
        return _needed_sources(ctx)

    def process_shard(self, ctx: RunContext, index: int, work: Any) -> ShardResult:
        cfg = ctx.config.mine
        if work["source"] == "visual_genome":
            with _progress(bool(ctx.options.get("progress", sys.stderr.isatty()))) as report:
                result: MineResult = mine_visual_genome(work["root"], cfg, ctx.seed, report)
            rows_in = int(result.summary.get("images", 0))
        else:
            result = mine_fsc147(work["root"], cfg, ctx.seed)
            rows_in = int(result.summary.get("fsc_images", 0))
        outputs: dict[str, Any] = {"candidates": result.candidates}
        for name, table in (("pair_stats", result.pair_table), ("attribute_stats", result.attribute_table)):
            outputs[name] = table if table is not None else []  # Arrow tables: checked against the schema by the writer
        return ShardResult(outputs=outputs, rejects=result.rejects, rows_in=rows_in, extra=_manifest_extra(work["source"], result))

    def finalize(self, ctx: RunContext, summary: dict[str, Any]) -> dict[str, Any]:
        rows = addresses.CANDIDATES.reader(ctx.run).rows(["task", "variant"])
        by: dict[str, int] = {}
        for r in rows:
            key = f"{r['task']}/{r['variant']}"
            by[key] = by.get(key, 0) + 1
        out: dict[str, Any] = {"candidates_by_task": dict(sorted(by.items()))}
        done = set(summary.get("completed_shards", []))
        for marker in self.store(ctx).markers():
            if marker["shard"] in done:
                out.update(marker.get("extra", {}))
        return out


def _manifest_extra(source: str, result: MineResult) -> dict[str, Any]:
    """What the manifest reports per source beyond counts: what each naming rule merged (VG),
    how many FSC147 images lay outside the configured splits."""
    if source == "visual_genome":
        return {"canonicalisation": result.summary.get("canonicalisation", {})}
    keys = ("fsc_images", "fsc_outside_splits", "fsc_split_counts")
    return {"fsc147": {k: result.summary[k] for k in keys if k in result.summary}}


class _progress:
    """A rich progress line per VG file (elements read), shown only on a terminal."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._bar = None
        self._tasks: dict[str, Any] = {}

    def __enter__(self):
        if not self.enabled:
            return None
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self._bar = Progress(SpinnerColumn(), TextColumn("mine: {task.description}"), TextColumn("{task.completed:,} images"), TimeElapsedColumn(), transient=True)
        self._bar.start()
        return self._report

    def _report(self, kind: str, done: int) -> None:
        if kind not in self._tasks:
            self._tasks[kind] = self._bar.add_task(f"{kind}.json", total=None)
        if done >= 0:  # -1: a worker process finished the file (no per-batch counts across processes)
            self._bar.update(self._tasks[kind], completed=done)

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.stop()

"""The ``mine`` stage: source annotations -> candidates, pair statistics, attribute statistics.

Mining is a whole-dataset computation (counts over every image), so the stage plans one
work unit per configured source that feeds a requested task (a :class:`miners.sources.SourceSpec`:
Visual Genome, FSC147, a COCO-format file, or a third-party format; which tasks each feeds is
the task registry's answer, ``TaskSpec.miners``) rather than shards of images; each unit streams
its files once and runs the requested tasks' miners on what it read (``miners/dispatch.py``).
The stage key covers the
``mine`` and ``sources`` config sections, the run seed, and the source files' path, size
and modification time, so editing a threshold or replacing a file re-mines.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from miners.dispatch import TaskMiner
from miners.extend import selection_file
from miners.result import MineResult
from miners.sources import BUILTIN, SourceSpec, available, source_spec
from storage import addresses
from tasks.engine.base import RunContext, ShardResult, Stage, StageInputError
from tasks.engine.build_config import BuildConfig, SourcesConfig
from tasks.engine.registry import all_specs

STAGE = "mine"


class MineSourceMissing(StageInputError):
    """A task was asked for whose source folder is not configured or lacks its annotation files."""


def source_setting(sources: SourcesConfig, name: str) -> str | None:
    """``sources.<name>`` for a built-in source, ``sources.other[name]`` for a third-party one."""
    value = getattr(sources, name) if name in BUILTIN else sources.other.get(name)
    return str(value) if value else None


def task_miners(source: str, tasks: Iterable[str]) -> list[TaskMiner]:
    """The requested tasks' miners for ``source``, loaded here and handed down to the source's
    ``mine`` (benchmark order, whatever order the config lists them in): the miners' room never
    looks a task up."""
    wanted = set(tasks)
    return [
        TaskMiner(tid, spec.miner(source), tuple(spec.hook("vg_reads")) if spec.has("vg_reads") else ())
        for tid, spec in all_specs().items()
        if tid in wanted and spec.miners.get(source)
    ]


def fed_tasks(spec: SourceSpec) -> tuple[str, ...]:
    """The tasks a source feeds, in benchmark order: those whose spec has a miner for it, then its
    ``own_tasks`` (tasks its ``mine`` produces by itself)."""
    return spec.fed_by(all_specs())


def feeds(spec: SourceSpec, tasks: Iterable[str]) -> list[str]:
    """The requested tasks ``spec`` can feed, in the requested order."""
    fed = fed_tasks(spec)
    return [t for t in tasks if t in fed]


def _needed_sources(ctx: RunContext) -> list[dict[str, str]]:
    """One work unit per configured source that feeds a requested task, in registry order."""
    return needed_sources(ctx.config)


def needed_sources(cfg: BuildConfig) -> list[dict[str, str]]:
    """:func:`_needed_sources` of a run config, for the checks made before a run starts
    (``flows/config_checks.py``); :class:`MineSourceMissing` when a task has no source."""
    units = []
    fed: set[str] = set()
    for name in dict.fromkeys([*BUILTIN, *sorted(cfg.sources.other)]):
        spec = source_spec(name)
        tasks = feeds(spec, cfg.mine.tasks)
        setting = source_setting(cfg.sources, name)
        if tasks and setting:
            units.append({"source": name, "root": setting})
            fed.update(tasks)
    missing = [t for t in cfg.mine.tasks if t not in fed]
    if missing:
        options = [source_spec(n) for n in available() if feeds(source_spec(n), missing)]
        names = " or ".join(f"sources.{s.name} ({s.setting_help})" for s in options) or "a source that feeds them"
        raise MineSourceMissing(f"mine.tasks {missing} need {names}")
    return units


# Sources every release had; the others key the stage only when set, so a run built before
# they existed keeps its mine key (and is not re-mined) after an upgrade.
_FIRST_SOURCES = ("visual_genome", "fsc147")


def _sources_key(sources: Any) -> dict[str, Any]:
    dumped = sources.model_dump(mode="json")
    return {k: v for k, v in dumped.items() if k in _FIRST_SOURCES or v}


def _spec(unit: dict[str, str]) -> SourceSpec:
    return source_spec(unit["source"])


def source_files(ctx: RunContext) -> list[str]:
    """The annotation files the stage reads (images are checked per candidate, not fingerprinted)."""
    return [f for unit in _needed_sources(ctx) for f in _spec(unit).files(unit["root"], ctx.config.mine)]


def required_files(ctx: RunContext) -> list[str]:
    """The files mining cannot start without (alias files are optional)."""
    return required_source_files(ctx.config)


def required_source_files(cfg: BuildConfig) -> list[str]:
    """:func:`required_files` of a run config."""
    return [f for unit in needed_sources(cfg) for f in _spec(unit).required(unit["root"], cfg.mine)]


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

    def config_section(self, ctx: RunContext) -> dict[str, object]:
        return {
            "mine": ctx.config.mine.stage_key(),  # the sections of the tasks mined only (miners/config.py)
            "sources": _sources_key(ctx.config.sources),
            "seed": ctx.seed,
        }

    def input_fingerprints(self, ctx: RunContext) -> dict[str, str]:
        fps = {path: _fingerprint(path) for path in source_files(ctx)}
        if ctx.config.mine.extend_from:  # extension mode: another previous selection re-mines
            path = selection_file(ctx.config.mine.extend_from)
            fps[path] = _fingerprint(path)
        missing = [p for p in required_files(ctx) if fps.get(p) == "absent"]
        if missing:
            raise MineSourceMissing(
                "source annotation files not found: " + ", ".join(missing) + " (check the sources section; "
                "relative paths are read from the current folder; `reactbench sample-data data/sample` writes the demo data)"
            )
        return fps

    def plan(self, ctx: RunContext) -> list[Any]:
        return _needed_sources(ctx)

    def process_shard(self, ctx: RunContext, index: int, work: Any) -> ShardResult:
        spec = _spec(work)
        with _progress(bool(ctx.options.get("progress", sys.stderr.isatty()))) as report:
            result: MineResult = spec.run(
                work["root"], ctx.config.mine, ctx.seed, report, task_miners(spec.name, ctx.config.mine.tasks)
            )
        outputs: dict[str, Any] = {"candidates": result.candidates}
        for name, table in (("pair_stats", result.pair_table), ("attribute_stats", result.attribute_table)):
            outputs[name] = (
                table if table is not None else []
            )  # Arrow tables: checked against the schema by the writer
        rows_in = int(result.summary.get(spec.images_key, 0))
        return ShardResult(outputs=outputs, rejects=result.rejects, rows_in=rows_in, extra=spec.manifest(result))

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


class _progress:
    """A rich progress line per annotation file (elements read), shown only on a terminal."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._bar = None
        self._tasks: dict[str, Any] = {}

    def __enter__(self):
        if not self.enabled:
            return None
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self._bar = Progress(
            SpinnerColumn(),
            TextColumn("mine: {task.description}"),
            TextColumn("{task.completed:,} images"),
            TimeElapsedColumn(),
            transient=True,
        )
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

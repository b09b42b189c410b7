"""Running a stage: plan, skip finished shards, process the rest, write the manifest.

Plain Python: ``map_shards`` decides where shards run (a thread pool by default; the flows
pass a Prefect or Ray mapper). Nothing here knows about Prefect.
"""

from __future__ import annotations

import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Protocol

from storage.hashing import config_hash
from storage.stage_store import code_version, utc_now
from tasks.base import RunContext, Stage
from tasks.reuse import FORCE_OPTION, forces_stage

ProgressFn = Callable[[int, int], None]  # (shards done, shards total)


class ShardMapper(Protocol):
    def __call__(self, fn: Callable[[int], dict[str, Any]], indices: list[int]) -> list[dict[str, Any]]: ...


def thread_mapper(workers: int = 2) -> ShardMapper:
    def run(fn: Callable[[int], dict[str, Any]], indices: list[int]) -> list[dict[str, Any]]:
        if workers <= 1 or len(indices) <= 1:
            return [fn(i) for i in indices]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(fn, indices))

    return run


@dataclass
class StagePlan:
    stage: str
    key: str
    config_hash: str
    inputs: dict[str, str]
    work: list[Any]
    todo: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)


@dataclass
class StageSummary:
    stage: str
    shards_total: int
    shards_skipped: int
    shards_run: int
    rows_in: int
    rows_out: dict[str, int]
    rejected: int
    reject_reasons: dict[str, int]
    seconds: float
    extra: dict[str, Any] = field(default_factory=dict)
    items_reused: int = 0  # items of this run's shards taken from the reuse store
    items_computed: int = 0  # ... and computed (editor / model called)

    @property
    def all_skipped(self) -> bool:
        return self.shards_run == 0


class ShardFailed(RuntimeError):
    pass


def prepare_stage(stage: Stage, ctx: RunContext, force: bool = False) -> StagePlan:
    """Compute the stage key, reset stale outputs, and find which shards still need work."""
    store = stage.store(ctx)
    ctx.run.remove_temporaries(stage.name)  # leftovers of a run killed mid-write
    ctx.run.rm(stage.name, "_errors")  # tracebacks of an earlier attempt
    inputs = stage.input_fingerprints(ctx)
    chash = config_hash(stage.config_section(ctx))
    key = config_hash({"config": chash, "inputs": inputs, "stage": stage.name})
    manifest = store.read_manifest()
    if force:
        ctx.options[FORCE_OPTION] = True  # the shards' item-reuse hooks compute every item again
    if force or forces_stage(stage.name, ctx.options) or (manifest is not None and manifest.get("key") != key):
        store.reset()
    work = stage.plan(ctx)
    store.prune_shards(len(work))
    plan = StagePlan(stage.name, key, chash, inputs, work)
    for i in range(len(work)):
        (plan.skipped if store.shard_done(i, key) else plan.todo).append(i)
    store.write_manifest(
        {
            "stage": stage.name,
            "status": "running",
            "key": key,
            "config_hash": chash,
            "input_fingerprints": inputs,
            "code_version": code_version(),
            "shards_total": len(work),
            "started_at": utc_now(),
            "schemas": {k: v.version for k, v in stage.outputs.items()},
        }
    )
    return plan


def requeue_transient_rejects(stage: Stage, ctx: RunContext, plan: StagePlan, reasons: Iterable[str]) -> list[int]:
    """Move finished shards whose rejects include a transient reason (e.g. ``out_of_memory``)
    back to the to-do list, so a rerun retries the items that failed for passing reasons."""
    wanted = set(reasons)
    if not wanted or not plan.skipped:
        return []
    store = stage.store(ctx)
    again = [i for i in plan.skipped if wanted & set((store.marker(i) or {}).get("reject_reasons", {}))]
    if again:
        plan.skipped = [i for i in plan.skipped if i not in again]
        plan.todo = sorted([*plan.todo, *again])
    return again


def run_one_shard(stage: Stage, ctx: RunContext, plan: StagePlan, index: int) -> dict[str, Any]:
    """Process and write one shard; returns its completion marker."""
    store = stage.store(ctx)
    result = stage.process_shard(ctx, index, plan.work[index])
    return store.write_shard(index, plan.key, result)


def finish_stage(stage: Stage, ctx: RunContext, plan: StagePlan, started: float) -> StageSummary:
    store = stage.store(ctx)
    summary = store.summarize(plan.key)
    missing = sorted(set(range(len(plan.work))) - set(summary["completed_shards"]))
    if missing:
        raise ShardFailed(f"stage {stage.name!r}: shards {missing} did not complete; rerun to retry only those")
    extra = stage.finalize(ctx, summary) or {}
    manifest = store.read_manifest() or {}
    manifest.update(
        {
            "status": "complete",
            "finished_at": utc_now(),
            "completed_shards": summary["completed_shards"],
            "counts": {"rows_in": summary["rows_in"], **summary["rows_out"], "rejected": summary["rejected"]},
            "reject_reasons": summary["reject_reasons"],
            "output_fingerprint": store.output_fingerprint(),
            "extra": extra,
        }
    )
    store.write_manifest(manifest)
    return stage_summary(stage.name, plan, summary, started, extra)


def stage_summary(name: str, plan: StagePlan, summary: dict[str, Any], started: float, extra: dict[str, Any] | None = None) -> StageSummary:
    """The counts of a stage run (``summary`` from ``StageStore.summarize``); shards run are those
    of this run's to-do list that completed (all of them when the stage finished)."""
    done = set(summary["completed_shards"])
    ran = [summary.get("items_by_shard", {}).get(i, {}) for i in plan.todo if i in done]
    return StageSummary(
        stage=name,
        shards_total=len(plan.work),
        shards_skipped=len(plan.skipped),
        shards_run=len([i for i in plan.todo if i in done]),
        rows_in=summary["rows_in"],
        rows_out=summary["rows_out"],
        rejected=summary["rejected"],
        reject_reasons=summary["reject_reasons"],
        seconds=time.perf_counter() - started,
        extra=extra or {},
        items_reused=sum(x.get("reused", 0) for x in ran),
        items_computed=sum(x.get("computed", 0) for x in ran),
    )


def run_stage(
    stage: Stage,
    ctx: RunContext,
    *,
    force: bool = False,
    mapper: ShardMapper | None = None,
    progress: ProgressFn | None = None,
    requeue_reasons: Iterable[str] = (),
) -> StageSummary:
    """Run a stage to completion in this process (shards on ``mapper``, threads by default).

    Finished shards with rejects for one of ``requeue_reasons`` (transient failures such as
    ``out_of_memory``) run again, so a rerun retries exactly the items that failed for passing reasons.
    """
    started = time.perf_counter()
    plan = prepare_stage(stage, ctx, force=force)
    requeue_transient_rejects(stage, ctx, plan, requeue_reasons)
    total = len(plan.work)
    done = [len(plan.skipped)]
    if progress:
        progress(done[0], total)
    errors: list[tuple[int, str]] = []

    def one(index: int) -> dict[str, Any]:
        try:
            marker = run_one_shard(stage, ctx, plan, index)
        except Exception as exc:  # a failed shard never blocks the others
            errors.append((index, f"{exc.__class__.__name__}: {exc}"))
            ctx.run.write_text_atomic(f"{stage.name}/_errors/shard-{index:05d}.txt", traceback.format_exc())
            marker = {"shard": index, "failed": True}
        done[0] += 1
        if progress:
            progress(done[0], total)
        return marker

    (mapper or thread_mapper(_workers(ctx)))(one, plan.todo)
    if errors:
        raise ShardFailed(
            f"stage {stage.name!r}: {len(errors)} shard(s) failed (the others are kept; a rerun retries only these):\n"
            + describe_failures(errors)
            + f"\ntracebacks: {ctx.run.path(stage.name, '_errors')}"
        )
    return finish_stage(stage, ctx, plan, started)


def describe_failures(errors: list[tuple[int, str]]) -> str:
    """One line per distinct error, naming the shards it hit (a bad setting fails every shard alike)."""
    by_message: dict[str, list[int]] = {}
    for index, message in sorted(errors):
        by_message.setdefault(message, []).append(index)
    lines = []
    for message, shards in by_message.items():
        named = ", ".join(map(str, shards[:8])) + (f" and {len(shards) - 8} more" if len(shards) > 8 else "")
        lines.append(f"  shard{'s' if len(shards) > 1 else ''} {named}: {message}")
    return "\n".join(lines)


def _workers(ctx: RunContext) -> int:
    try:
        return int(ctx.config.run.workers)
    except AttributeError:
        return 1


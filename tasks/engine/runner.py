"""Running a stage: plan, skip finished shards, process the rest, write the manifest.

The one shard loop of the pipeline, for every mode: local threads, Prefect and Ray differ only
in the ``ShardMapper`` they pass (where a shard runs, how it is retried). GPU placement
(``tasks.engine.devices.shard_placement``), retry classification (``tasks.engine.retries``) and the
``_errors/`` tracebacks live here and in those modules, never in a mapper. Nothing here knows
about Prefect.

A stage's model servers are checked before it writes anything (``tasks.engine.mllm``). A stage
whose server stops answering (``prompts.clients.endpoint.EndpointError``) or whose process is
told to stop (a signal) ends early: shards not started are not started, finished ones are kept,
and the manifest says ``interrupted`` with why (``stopped_by``); the exception carries a note
counting what finished and what a resume computes.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from prompts.clients import call_stats
from prompts.clients.endpoint import EndpointError
from storage.fs import is_disk_full
from storage.hashing import canonical_json, config_hash, sha256_hex
from storage.run_lock import ensure_lease, held_token
from storage.stage_store import ShardMarker, StageStore, code_version, utc_now
from tasks.engine.base import RunContext, Stage
from tasks.engine.devices import GpuSlot, shard_placement
from tasks.engine.mllm import require_endpoints, server_configs
from tasks.engine.placement import PLACEMENT_OPTION
from tasks.engine.retries import RetryPolicy
from tasks.engine.reuse import FORCE_OPTION, forces_stage

ProgressFn = Callable[[int, int], None]  # (shards done, shards total)
ShardDone = Callable[["ShardJob", "BaseException | None"], None]  # (job, None or its final error)
_Logger = logging.Logger | logging.LoggerAdapter[logging.Logger]
CallCounts = dict[tuple[str, str], dict[str, int]]  # prompts.clients.call_stats.snapshot()
log = logging.getLogger(__name__)
log.addHandler(logging.NullHandler())  # silent unless the application configures logging (the CLI prints the outcome)

# Stage runs (``ShardJob.run_id``) that are stopping: their jobs not yet started do not start.
# Process-local on purpose: a job pickled to another process (Ray) runs as before.
_HALTED: set[str] = set()


class ShardNotStarted(RuntimeError):
    """The stage stopped (a model server failed) before this shard started."""

    retryable = False


@dataclass
class ShardJob:
    """One shard's work, self-contained so a mapper may run it in another thread or process (Ray).

    Calling it places the shard (GPU), processes it and writes it with its completion marker;
    a failure leaves its traceback in ``<stage>/_errors/`` and raises, so the mapper can retry.
    """

    stage: Stage
    ctx: RunContext
    key: str
    index: int
    work: object  # the stage's plan entry, handed to its process_shard
    gpu_slot: GpuSlot | None = None
    lease_token: str | None = None  # the driver's lease: a worker that lost it writes nothing
    run_id: str | None = None  # the stage run (see ``_HALTED``)
    origin: str = field(default_factory=lambda: call_stats.PROCESS)  # the process that planned it

    def __call__(self) -> ShardMarker:
        if self.run_id is not None and self.run_id in _HALTED:
            raise ShardNotStarted(f"{self.stage.name} shard {self.index} was not started: the stage is stopping")
        carried = self.origin != call_stats.PROCESS  # run in another process (a Ray worker)
        before = call_stats.snapshot() if carried else None
        try:
            with shard_placement(self.stage, self.ctx, self.gpu_slot, self.index) as shard_ctx:
                result = self.stage.process_shard(shard_ctx, self.index, self.work)
            ensure_lease(self.ctx.run, self.lease_token)
            return self.stage.store(self.ctx).write_shard(
                self.index, self.key, result, shard_ctx.options.get(PLACEMENT_OPTION)
            )
        except Exception:
            self.ctx.run.write_text_atomic(error_path(self.stage.name, self.index), traceback.format_exc())
            raise
        finally:
            if before is not None:
                self._report_calls(before)

    def _report_calls(self, before: CallCounts) -> None:
        """Leave this process's model calls for the shard where the planning process collects
        them (:func:`merge_worker_calls`): its manifest and exit status count them too."""
        calls = call_stats.since(before, limits=True)
        if not calls:
            return
        name = f"shard-{self.index:05d}-{uuid.uuid4().hex[:12]}.json"
        try:
            self.ctx.run.write_text_atomic(f"{calls_folder(self.stage.name, self.run_id)}/{name}", json.dumps(calls))
        except OSError as exc:  # the shard's own outcome is what matters; a full disk is reported by it
            log.warning("%s shard %d: its model-call counts were not kept: %s", self.stage.name, self.index, exc)


def calls_folder(stage: str, run_id: str | None) -> str:
    """Where shards run in other processes leave their model-call counts for one stage run."""
    return f"{stage}/_calls/{run_id or 'unplanned'}"


def merge_worker_calls(ctx: RunContext, stage: Stage, run_id: str) -> None:
    """Add the model calls the stage run's shards made in other processes to this process's
    counts (``prompts.clients.call_stats``), then drop the files they left."""
    folder = calls_folder(stage.name, run_id)
    try:
        names = ctx.run.listdir(folder)
        for name in names:
            call_stats.merge(json.loads(ctx.run.read_text(f"{folder}/{name}")))
        if names:
            ctx.run.rm(folder)
    except (OSError, ValueError) as exc:  # counts are a report: never the reason a stage fails
        log.warning("%s: the model-call counts of its worker processes were not read: %s", stage.name, exc)


def error_path(stage: str, index: int) -> str:
    return f"{stage}/_errors/shard-{index:05d}.txt"


class ShardMapper(Protocol):
    """Runs every job (retrying per ``retry``) and calls ``done(job, None | final error)`` for each."""

    def __call__(self, jobs: list[ShardJob], retry: RetryPolicy, done: ShardDone) -> None: ...


def run_with_retries(job: ShardJob, retry: RetryPolicy) -> ShardMarker:
    """Run a job in this process, retrying errors the policy calls worth it."""
    attempt = 0
    while True:
        try:
            return job()
        except Exception as exc:
            if attempt >= retry.retries or not retry.should_retry(exc):
                raise
            attempt += 1
            log.warning(
                "%s shard %d: retry %d/%d after %s: %s",
                job.stage.name,
                job.index,
                attempt,
                retry.retries,
                type(exc).__name__,
                exc,
            )
            time.sleep(retry.delay_s)


def thread_mapper(workers: int = 2) -> ShardMapper:
    """Local mode: ``workers`` shards at once on a thread pool."""

    def run(jobs: list[ShardJob], retry: RetryPolicy, done: ShardDone) -> None:
        def one(job: ShardJob) -> None:
            try:
                run_with_retries(job, retry)
            except Exception as exc:  # a failed shard never blocks the others
                done(job, exc)
            else:
                done(job, None)

        if workers <= 1 or len(jobs) <= 1:
            for job in jobs:
                one(job)
            return
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(one, jobs))

    return run


@dataclass
class StagePlan:
    stage: str
    key: str
    config_hash: str
    inputs: dict[str, str]
    work: list[object]
    todo: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    damaged: dict[int, list[str]] = field(
        default_factory=dict
    )  # finished shards whose files did not hold up: index -> what


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
    """Shards of a stage failed; ``summary`` (when set) counts the shards that did finish."""

    summary: StageSummary | None = None


def prepare_stage(stage: Stage, ctx: RunContext, force: bool = False) -> StagePlan:
    """Compute the stage key, reset stale outputs, and find which shards still need work."""
    store = stage.store(ctx)
    ctx.run.remove_temporaries(stage.name)  # leftovers of a run killed mid-write
    ctx.run.rm(stage.name, "_errors")  # tracebacks of an earlier attempt
    inputs = stage.input_fingerprints(ctx)
    chash = config_hash(stage.config_section(ctx))
    work = stage.plan(ctx)  # reads upstream artifacts only, so it may come before a reset
    layout = plan_fingerprint(work)
    key = config_hash({"config": chash, "inputs": inputs, "stage": stage.name, "plan": layout})
    manifest = store.read_manifest()
    if force:
        ctx.options[FORCE_OPTION] = True  # the shards' item-reuse hooks compute every item again
    if force or forces_stage(stage.name, ctx.options) or (manifest is not None and manifest.get("key") != key):
        store.reset()
    store.prune_shards(len(work))
    plan = StagePlan(stage.name, key, chash, inputs, work)
    finished = check_finished_shards(
        store, key, (manifest or {}).get("files") if (manifest or {}).get("key") == key else None
    )
    plan.damaged = {i: problems for i, problems in finished.items() if problems}
    for i in range(len(work)):
        (plan.skipped if i in finished and i not in plan.damaged else plan.todo).append(i)
    store.write_manifest(
        {
            "stage": stage.name,
            "status": "running",
            "key": key,
            "config_hash": chash,
            "input_fingerprints": inputs,
            "code_version": code_version(),
            "shards_total": len(work),
            "plan_fingerprint": layout,
            "started_at": utc_now(),
            "schemas": {k: v.version for k, v in stage.outputs.items()},
        }
    )
    return plan


def check_finished_shards(store: StageStore, key: str, recorded: dict[str, Any] | None) -> dict[int, list[str]]:
    """The shards finished under ``key``, each with what is wrong with its files (empty when they
    are as its marker wrote them; otherwise its marker is removed and the shard runs again).

    A marker is never trusted alone (a deleted or edited Parquet file used to be read as an empty
    or other output). The check is one listing of the stage folder (names and sizes) and one read
    of each file to compare its sha256; the read replaces the one ``finish_stage`` made to
    fingerprint the outputs, which now takes the checked sha256 from the markers. ``recorded``
    (the last manifest's ``files``) describes the files of markers written before markers did."""
    markers = [m for m in store.markers() if m.get("key") == key]
    sizes = store.run.file_sizes(store.stage) if markers else {}
    out: dict[int, list[str]] = {}
    for m in markers:
        problems = out[int(m["shard"])] = store.damage(store.marker_files(m, recorded), sizes, checksums=True)
        if problems:
            store.drop_marker(int(m["shard"]))
    return out


def plan_fingerprint(work: list[object]) -> str:
    """A hash of the shards as planned: which items each holds, in order.

    Markers are found by shard index, so the stage key must change whenever the same index would
    hold other items: a new ``run.shard_size``, or any other setting that regroups items. Keying
    the plan itself, rather than a list of such settings, covers those not thought of yet.
    """
    return config_hash([sha256_hex(canonical_json(shard)) for shard in work])


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


def finish_stage(
    stage: Stage, ctx: RunContext, plan: StagePlan, started: float, calls_before: CallCounts | None = None
) -> StageSummary:
    store = stage.store(ctx)
    markers = store.markers()
    summary = store.summarize(plan.key, markers)
    missing = sorted(set(range(len(plan.work))) - set(summary["completed_shards"]))
    if missing:
        raise ShardFailed(f"stage {stage.name!r}: shards {missing} did not complete; rerun to retry only those")
    extra = stage.finalize(ctx, summary) or {}
    files = store.output_files(plan.key, markers)  # checked by prepare_stage or just written: no read
    manifest = store.read_manifest() or {}
    manifest.update(
        {
            "status": "complete",
            "finished_at": utc_now(),
            "completed_shards": summary["completed_shards"],
            "counts": {"rows_in": summary["rows_in"], **summary["rows_out"], "rejected": summary["rejected"]},
            "reject_reasons": summary["reject_reasons"],
            "output_fingerprint": store.output_fingerprint(files),
            "files": files,
            "extra": extra,
        }
    )
    _note_model_calls(manifest, calls_before)
    ensure_lease(ctx.run, None)  # the holder's own flag: a taken-over build does not seal the stage
    store.write_manifest(manifest)
    return stage_summary(stage.name, plan, summary, started, extra, damaged_note(plan))


def _note_model_calls(manifest: dict[str, Any], calls_before: CallCounts | None) -> None:
    """``model_calls`` in a manifest: per model server, the requests this stage run sent, how many
    failed and were retried, and the error rate (``prompts.clients.call_stats``); a stage that
    called no server (the ``rules`` backend) gets none, and a rerun replaces an older count."""
    manifest.pop("model_calls", None)
    if calls_before is not None:
        calls = call_stats.since(calls_before)
        if calls:
            manifest["model_calls"] = calls


def damaged_note(plan: StagePlan) -> str | None:
    """What the summary says about shards recomputed because their files did not hold up."""
    if not plan.damaged:
        return None
    problems = [p for _, found in sorted(plan.damaged.items()) for p in found]
    more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
    return f"recomputed {len(plan.damaged)} finished shard(s) whose files did not match their markers: {', '.join(problems[:3])}{more}"


def stage_summary(
    name: str,
    plan: StagePlan,
    summary: dict[str, Any],
    started: float,
    extra: dict[str, Any] | None = None,
    note: str | None = None,
) -> StageSummary:
    """The counts of a stage run (``summary`` from ``StageStore.summarize``); shards run are those
    of this run's to-do list that completed (all of them when the stage finished). ``note``: a
    message of the runner's own, joined to the stage's (``extra["note"]``)."""
    if note:
        extra = {**(extra or {}), "note": "; ".join(n for n in ((extra or {}).get("note"), note) if n)}
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


@dataclass(frozen=True)
class ShardExecution:
    """How a stage's shards are executed, which only the orchestrator knows (Prefect sets all four;
    the local build takes the defaults): the mapper (threads over ``run.workers``), the retry policy
    (``orchestration.retries``), the slot held around each GPU shard besides its device lease, and
    the logger the stage's messages go to."""

    mapper: ShardMapper | None = None
    retry: RetryPolicy | None = None
    gpu_slot: GpuSlot | None = None
    logger: _Logger | None = None


class _ShardTally:
    """What the shards of one stage run did, as the mapper reports it (from any thread): how many
    finished, the failures, and the failures that stop the stage (a full disk, a server down)."""

    def __init__(self, stage: Stage, plan: StagePlan, progress: ProgressFn | None, logger: _Logger) -> None:
        self.stage, self.total, self.progress, self.logger = stage, len(plan.work), progress, logger
        self.skipped = len(plan.skipped)
        self.finished = self.skipped
        self.errors: list[tuple[int, str]] = []
        self.disk_full: list[BaseException] = []  # a full disk: one message for the stage, not one per shard
        self.server: list[EndpointError] = []  # a model server that stopped answering: the stage stops
        self.run_id = uuid.uuid4().hex
        self._lock = threading.Lock()

    def done(self, job: ShardJob, exc: BaseException | None) -> None:
        with self._lock:
            if exc is None:
                self.finished += 1
            else:
                if is_disk_full(exc):
                    self.disk_full.append(exc)
                    _HALTED.add(self.run_id)  # the shards not started yet would meet the same full disk
                if isinstance(exc, EndpointError):
                    self.server.append(exc)
                    _HALTED.add(self.run_id)  # the shards not started yet would meet the same server
                self.errors.append((job.index, f"{exc.__class__.__name__}: {exc}"))
                self.logger.error(
                    "%s: shard %d failed: %s",
                    self.stage.name,
                    job.index,
                    "".join(traceback.format_exception_only(exc)).strip(),
                )
            if self.progress:
                self.progress(self.finished, self.total)

    def stop_note(self) -> str:
        return stop_note(self.stage.name, self.total, self.skipped, self.finished - self.skipped)


def run_stage(
    stage: Stage,
    ctx: RunContext,
    *,
    force: bool = False,
    progress: ProgressFn | None = None,
    requeue_reasons: Iterable[str] = (),
    execution: ShardExecution | None = None,
) -> StageSummary:
    """Run a stage to completion: shards on ``execution.mapper`` (threads by default), then the manifest.

    Finished shards with rejects for one of ``requeue_reasons`` (transient failures such as
    ``out_of_memory``) run again, so a rerun retries exactly the items that failed for passing
    reasons. ``execution`` (:class:`ShardExecution`) says how the shards run; its retry policy
    defaults to ``orchestration.retries`` of the config.
    ``progress`` sees (finished shards, total) after each shard; a failed shard is not finished.
    A stage with failed shards raises ``ShardFailed`` (carrying the counts of what did finish)
    after every other shard ran.
    """
    execution = execution or ShardExecution()
    logger = execution.logger or log
    started = time.perf_counter()
    calls_before = call_stats.snapshot()
    check_endpoints(stage, ctx, force=force)  # before anything is written: a dead server stops the command here
    plan = prepare_stage(stage, ctx, force=force)
    _log_plan(stage, plan, requeue_transient_rejects(stage, ctx, plan, requeue_reasons), logger)
    tally = _ShardTally(stage, plan, progress, logger)
    if progress:
        progress(tally.finished, tally.total)

    def stopped(exc: BaseException) -> BaseException:
        """The manifest says why the stage stopped; ``exc`` gets a note of what finished."""
        record_stop(stage, ctx, plan, stop_reason(exc), calls_before)
        exc.add_note(tally.stop_note())
        return exc

    token = held_token(ctx.run)
    jobs = [
        ShardJob(stage, ctx, plan.key, i, plan.work[i], execution.gpu_slot, token, tally.run_id) for i in plan.todo
    ]
    try:
        if jobs:
            require_endpoints(stage.model_endpoints(ctx.config))  # planned work for a stage found complete before
        mapper = execution.mapper or thread_mapper(_workers(ctx))
        mapper(jobs, execution.retry or RetryPolicy.from_config(ctx.config), tally.done)
    except BaseException as exc:  # a stop signal (Interrupted, KeyboardInterrupt), a server found down, a bug
        merge_worker_calls(ctx, stage, tally.run_id)
        stopped(exc)
        raise
    finally:
        _HALTED.discard(tally.run_id)
    merge_worker_calls(ctx, stage, tally.run_id)
    if tally.server:  # finished shards are kept; the resume computes the rest
        raise stopped(tally.server[0])
    if tally.disk_full:  # finished shards are kept; the rerun computes the rest
        raise stopped(tally.disk_full[0])
    _drop_stale_errors(stage, ctx, plan, {i for i, _ in tally.errors})
    if tally.errors:
        raise _shards_failed(stage, ctx, plan, tally.errors, started, calls_before)
    try:
        summary = finish_stage(stage, ctx, plan, started, calls_before)
    except BaseException as exc:
        record_stop(stage, ctx, plan, stop_reason(exc), calls_before)
        raise
    logger.info(
        "%s: %d shard(s) run, %d skipped, %d rows in, out %s, %d rejected",
        stage.name,
        summary.shards_run,
        summary.shards_skipped,
        summary.rows_in,
        summary.rows_out,
        summary.rejected,
    )
    return summary


def _log_plan(stage: Stage, plan: StagePlan, requeued: list[int], logger: _Logger) -> None:
    """What the plan found: shards rerun for transient rejects, damaged ones, what is left to run."""
    if requeued:
        logger.info("%s: rerunning shard(s) %s, which hold rejects of transient failures", stage.name, requeued)
    if plan.damaged:
        logger.warning(
            "%s: recomputing finished shard(s) %s whose files do not match their markers",
            stage.name,
            sorted(plan.damaged),
        )
    logger.info("%s: %d shard(s) to run, %d already complete", stage.name, len(plan.todo), len(plan.skipped))


def _shards_failed(
    stage: Stage,
    ctx: RunContext,
    plan: StagePlan,
    errors: list[tuple[int, str]],
    started: float,
    calls_before: CallCounts,
) -> ShardFailed:
    """The error of a stage whose shards failed, with the counts of what finished; the manifest
    records the stop."""
    failed = sorted({i for i, _ in errors})
    err = ShardFailed(
        f"stage {stage.name!r}: shards {failed} did not complete; rerun to retry only those "
        f"(the other shards are kept):\n"
        + describe_failures(errors)
        + f"\ntracebacks: {ctx.run.path(stage.name, '_errors')}"
    )
    err.summary = stage_summary(stage.name, plan, stage.store(ctx).summarize(plan.key), started)
    record_stop(stage, ctx, plan, f"shards {failed} failed", calls_before)
    return err


def check_endpoints(stage: Stage, ctx: RunContext, *, force: bool = False) -> None:
    """Check the model servers of a stage (``Stage.model_endpoints``) before it writes anything,
    unless it is :func:`up_to_date` (a rerun with nothing to compute needs no server; the runner
    checks again if planning finds work after all). Raises ``prompts.clients.endpoint.EndpointDown``."""
    configs = server_configs(stage.model_endpoints(ctx.config))
    if configs and (force or not up_to_date(stage, ctx)):
        require_endpoints(configs)


def up_to_date(stage: Stage, ctx: RunContext) -> bool:
    """Whether the stage is complete for its current config section and inputs, read without
    planning: its shards would all be skipped (unless regrouped, or holding transient rejects)."""
    from tasks.engine.base import StageInputError

    manifest = stage.store(ctx).read_manifest()
    if manifest is None or manifest.get("status") != "complete":
        return False
    try:
        return manifest.get("config_hash") == config_hash(stage.config_section(ctx)) and manifest.get(
            "input_fingerprints"
        ) == stage.input_fingerprints(ctx)
    except StageInputError:  # an upstream stage is not complete: this one will run after it
        return False


def record_stop(
    stage: Stage, ctx: RunContext, plan: StagePlan, why: str, calls_before: CallCounts | None = None
) -> None:
    """Write ``status: interrupted`` (with ``stopped_by``, ``stopped_at``) into the manifest of a
    stage that stopped before completing, so ``reactbench status`` tells the truth. Best effort:
    the cause of the stop (a full disk, a lost lease) stays the error reported."""
    store = stage.store(ctx)
    try:
        ensure_lease(ctx.run, None)
        manifest = store.read_manifest()
        if manifest is None or manifest.get("key") != plan.key or manifest.get("status") == "complete":
            return
        manifest.update({"status": "interrupted", "stopped_at": utc_now(), "stopped_by": why.splitlines()[0][:500]})
        _note_model_calls(manifest, calls_before)
        store.write_manifest(manifest)
    except Exception as exc:  # noqa: BLE001
        log.debug("%s: manifest not marked interrupted: %s", stage.name, exc)


def stop_reason(exc: BaseException) -> str:
    """How the manifest names what stopped a stage: the signal's name, or the error's class and message."""
    if not isinstance(exc, Exception):  # Interrupted (flows.cli_signals) is named after its signal
        return str(exc) or exc.__class__.__name__
    return f"{exc.__class__.__name__}: {exc}"


def stop_note(name: str, total: int, before: int, now: int) -> str:
    """What a stopped stage finished and what its resume computes, in one clause."""
    left = total - before - now
    return f"{name}: {before + now} of {total} shards finished, {now} of them in this run; {left} abandoned, computed on resume"


def _drop_stale_errors(stage: Stage, ctx: RunContext, plan: StagePlan, failed: set[int]) -> None:
    """Remove tracebacks of attempts that a retry then completed (only final failures keep one)."""
    if not ctx.run.exists(stage.name, "_errors"):
        return
    if not failed:
        ctx.run.rm(stage.name, "_errors")
        return
    for i in plan.todo:
        if i not in failed and ctx.run.exists(error_path(stage.name, i)):
            ctx.run.rm(error_path(stage.name, i))


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

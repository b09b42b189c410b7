"""Prefect flows: ``build`` (all stages) and ``stage`` (one); tasks work on shards, never single images.

The stage logic is the same as in local mode (``tasks.runner``); Prefect adds recorded runs,
retries of failed shard tasks, the task runner (threads or Ray), GPU placement and artifacts.

Flow parameters are what a deployment in ``prefect.yaml`` sets: ``config`` (a YAML path, or the
config as a mapping), ``run_dir``, ``stages``, ``force``, ``options`` (stage options such as
``no_cache``) and ``overrides`` (dotted config keys, e.g. ``{"mllm.base_url": "http://vllm:8000/v1"}``).

Failure handling: every shard of a stage is submitted; a shard that raises is retried
(``orchestration.retries`` times, ``retry_delay_s`` apart, transient errors only unless
``retry_transient_only`` is false) and, if it still fails, the other shards go on. The stage
then fails naming the missing shards; the build stops there (later stages read its output).
Finished shards carry completion markers, so rerunning the same build runs only what failed.
"""

from __future__ import annotations

import time
import traceback
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NONE
from prefect.futures import as_completed
from prefect.task_runners import ThreadPoolTaskRunner

from flows.cli_preflight import check_before_build
from flows.artifacts import ProgressArtifact, publish_build_summary, publish_stage_table
from flows.config import BuildConfig, OrchestrationConfig, config_from_dict, set_dotted, load_config
from flows.devices import lease_device, ray_device
from flows.runtime import ProgressFactory, make_context
from flows.stages import get_stage, select_stages
from storage.fs import RunFS
from tasks.base import DEVICE_OPTION, RunContext
from tasks.runner import ShardFailed, StageSummary, finish_stage, prepare_stage, requeue_transient_rejects, stage_summary

GPU_STAGES = frozenset({"edit"})  # stages whose shards hold a GPU (Ray num_gpus, device leases)


def uses_gpu(stage: Any) -> bool:
    """A stage's shards hold a GPU: the edit stage, or any stage class with ``uses_gpu = True``."""
    return bool(getattr(stage, "uses_gpu", stage.name in GPU_STAGES))


# --- config ----------------------------------------------------------------------------


def resolve_config(config: dict[str, Any] | str | None, overrides: dict[str, Any] | None = None) -> BuildConfig:
    """A flow's ``config`` parameter: a YAML path (deployments), a mapping (the CLI), or None (demo)."""
    if config is None or isinstance(config, (str, Path)):
        return load_config(config, overrides)
    if not overrides:
        return config_from_dict(config)
    data = config_from_dict(config).model_dump(mode="json")
    for dotted, value in overrides.items():
        set_dotted(data, dotted, value)
    return config_from_dict(data, "<config + overrides>")


# --- retries ---------------------------------------------------------------------------

_PERMANENT_OS_ERRORS = (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError)
_TRANSIENT_NAME_HINTS = ("outofmemory", "timeout", "connection", "ratelimit", "serviceunavailable", "internalserver", "transport")


def is_transient(exc: BaseException) -> bool:
    """Errors worth retrying: network and I/O hiccups, timeouts, (GPU) out-of-memory, rate limits.

    Matching by class name keeps torch / openai / httpx imports out of this module:
    ``torch.cuda.OutOfMemoryError``, ``openai.APIConnectionError``, ``openai.RateLimitError``,
    ``httpx.ConnectTimeout`` all match. Programming and data errors (KeyError, ValueError,
    schema errors) are not retried: they would fail the same way again.
    """
    for e in _chain(exc):
        if isinstance(e, _PERMANENT_OS_ERRORS):
            return False
        if isinstance(e, (OSError, MemoryError, TimeoutError, ConnectionError)):
            return True
        name = type(e).__name__.lower()
        if any(h in name for h in _TRANSIENT_NAME_HINTS):
            return True
    return False


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def retry_condition(transient_only: bool) -> Any:
    """A Prefect ``retry_condition_fn``: retry transient errors only, or every error."""

    def should_retry(task_obj: Any, task_run: Any, state: Any) -> bool:
        if not transient_only:
            return True
        try:
            exc = state.result(raise_on_failure=False)
        except Exception as err:  # pragma: no cover - the result could not be read back
            exc = err
        return isinstance(exc, BaseException) and is_transient(exc)

    return should_retry


# --- GPU placement ---------------------------------------------------------------------


@contextmanager
def shard_placement(stage: Any, ctx: RunContext) -> Iterator[RunContext]:
    """Place a shard: a Ray-assigned GPU, or a concurrency slot plus a leased device on this node.

    Yields the context the shard runs with; a chosen device is in ``ctx.options["device"]``.
    """
    orch: OrchestrationConfig = ctx.config.orchestration
    if not uses_gpu(stage):
        yield ctx
        return
    device = ray_device()
    if device is not None:
        yield _with_device(ctx, device)
        return
    slot = _gpu_slot(orch.gpu_concurrency_limit) if orch.gpu_concurrency_limit else nullcontext()
    with slot:
        if orch.gpu_devices:
            with lease_device(orch.gpu_devices, orch.device_lock_dir) as index:
                yield _with_device(ctx, f"cuda:{index}")
        else:
            yield ctx


def _with_device(ctx: RunContext, device: str) -> RunContext:
    return replace(ctx, options={**ctx.options, DEVICE_OPTION: device})


@contextmanager
def _gpu_slot(limit: str) -> Iterator[None]:
    """Hold one slot of a Prefect global concurrency limit (strict: a missing limit is an error)."""
    from prefect.concurrency._asyncio import ConcurrencySlotAcquisitionError
    from prefect.concurrency.sync import concurrency

    try:
        with concurrency(limit, occupy=1, strict=True):
            yield
    except ConcurrencySlotAcquisitionError as exc:
        raise RuntimeError(
            f"orchestration.gpu_concurrency_limit {limit!r}: no such Prefect global concurrency limit; "
            f"create it with `prefect gcl create {limit} --limit <number of GPUs>` ({exc})"
        ) from None


# --- tasks and flows -------------------------------------------------------------------


@task(
    name="process-shard",
    task_run_name="{stage_name}-shard-{index}",
    cache_policy=NONE,
    persist_result=False,
    retry_condition_fn=retry_condition(True),
)
def process_shard_task(stage_name: str, stage: Any, ctx: RunContext, key: str, index: int, work: Any) -> dict[str, Any]:
    """Process one shard and write it with its completion marker (the unit that is retried).

    ``stage`` travels as an object (pickled by reference to its class), so Ray workers run
    exactly the stage the driver planned; ``stage_name`` names the task run.
    """
    with shard_placement(stage, ctx) as shard_ctx:
        result = stage.process_shard(shard_ctx, index, work)
    return stage.store(ctx).write_shard(index, key, result)


def task_runner_for(config: BuildConfig) -> Any:
    """Threads (default, ``run.workers`` at once) or Ray via prefect-ray."""
    orch = config.orchestration
    if orch.task_runner == "ray":
        try:
            from prefect_ray import RayTaskRunner
        except ImportError as exc:  # pragma: no cover - the ray extra is part of test installs
            raise RuntimeError("orchestration.task_runner 'ray' needs the ray extra: pip install 'reactbench-pipeline[ray]'") from exc
        return RayTaskRunner(address=orch.ray_address, init_kwargs=ray_init_kwargs(orch))
    return ThreadPoolTaskRunner(max_workers=config.run.workers)


def ray_init_kwargs(orch: OrchestrationConfig) -> dict[str, Any]:
    """``ray.init`` arguments: for a local instance no dashboard plus ``orch.ray_init``; for a
    cluster (``ray_address`` set) only ``orch.ray_init`` and this process's Prefect API URL, which
    the cluster's workers do not inherit (Ray refuses resource arguments when joining a cluster)."""
    import os

    if not orch.ray_address:
        return {"include_dashboard": False, **orch.ray_init}
    kwargs: dict[str, Any] = dict(orch.ray_init)
    api = os.environ.get("PREFECT_API_URL")
    if api:
        runtime_env = dict(kwargs.get("runtime_env") or {})
        env_vars = {"PREFECT_API_URL": api, **(runtime_env.get("env_vars") or {})}
        kwargs["runtime_env"] = {**runtime_env, "env_vars": env_vars}
    return kwargs


@contextmanager
def ray_session(config: BuildConfig) -> Iterator[None]:
    """Start (or join) Ray once for a whole build, so stages do not each pay ``ray.init``."""
    orch = config.orchestration
    if orch.task_runner != "ray":
        yield
        return
    import ray

    if ray.is_initialized():
        yield
        return
    ray.init(address=orch.ray_address, **ray_init_kwargs(orch))
    try:
        yield
    finally:
        ray.shutdown()


def _submit_all(stage: Any, ctx: RunContext, key: str, work: list[Any], todo: list[int]) -> list[Any]:
    orch = ctx.config.orchestration
    shard_task = process_shard_task.with_options(
        retries=orch.retries,
        retry_delay_seconds=orch.retry_delay_s,
        retry_condition_fn=retry_condition(orch.retry_transient_only),
    )
    stage_name = stage.name
    gpu_opts = orch.task_runner == "ray" and uses_gpu(stage) and orch.gpus_per_edit_task > 0
    if gpu_opts:
        from prefect_ray.context import remote_options

        with remote_options(num_gpus=orch.gpus_per_edit_task):
            return [shard_task.submit(stage_name, stage, ctx, key, i, work[i]) for i in todo]
    return [shard_task.submit(stage_name, stage, ctx, key, i, work[i]) for i in todo]


# Progress callbacks of a CLI that runs the flows in its own process, by run directory URL. Flow
# parameters must be serialisable, so the terminal's progress bars travel beside them; a flow run on
# a worker finds no callback and reports through its progress artifact alone.
_PROGRESS: dict[str, ProgressFactory] = {}


@contextmanager
def watch_progress(run_dir: str, factory: ProgressFactory | None) -> Iterator[None]:
    """Show shard progress of flows run in this process for ``run_dir`` (e.g. rich bars in the CLI)."""
    if factory is None:
        yield
        return
    key = RunFS.open(run_dir).url
    _PROGRESS[key] = factory
    try:
        yield
    finally:
        _PROGRESS.pop(key, None)


@flow(name="reactbench-stage-shards", flow_run_name="{stage_name}")
def stage_shards_flow(
    stage_name: str, config: dict[str, Any], run_dir: str, force: bool = False, options: dict[str, Any] | None = None
) -> StageSummary:
    """Plan one stage, run its pending shards on the task runner, publish counts and progress."""
    ctx = RunContext(run=RunFS.open(run_dir), config=config_from_dict(config), options=dict(options or {}))
    logger = get_run_logger()
    started = time.perf_counter()
    stage = get_stage(stage_name)
    plan = prepare_stage(stage, ctx, force=force)
    requeued = requeue_transient_rejects(stage, ctx, plan, ctx.config.orchestration.rerun_reject_reasons)
    if requeued:
        logger.info("%s: rerunning shard(s) %s, which hold rejects of transient failures", stage_name, requeued)
    progress = ProgressArtifact(stage_name, total=len(plan.work), done=len(plan.skipped))
    factory = _PROGRESS.get(ctx.run.url)
    terminal = factory(stage_name) if factory else None
    finished = len(plan.skipped)
    if terminal:
        terminal(finished, len(plan.work))
    logger.info("%s: %d shard(s) to run, %d already complete", stage_name, len(plan.todo), len(plan.skipped))
    futures = _submit_all(stage, ctx, plan.key, plan.work, plan.todo)
    failures: list[str] = []
    for fut in as_completed(futures):
        try:
            fut.result()
        except Exception as exc:  # a failed shard never blocks the others
            failures.append(f"{exc.__class__.__name__}: {exc}")
            logger.error("%s: a shard failed after its retries: %s", stage_name, "".join(traceback.format_exception_only(exc)).strip())
        else:
            progress.advance()
        finished += 1
        if terminal:
            terminal(finished, len(plan.work))
    try:
        summary = finish_stage(stage, ctx, plan, started)
    except ShardFailed as exc:
        publish_stage_table(_partial_summary(stage, ctx, plan, started))
        raise ShardFailed(f"{exc}\n" + "\n".join(failures)) from None
    publish_stage_table(summary)
    logger.info(
        "%s: %d shard(s) run, %d skipped, %d rows in, out %s, %d rejected",
        stage_name, summary.shards_run, summary.shards_skipped, summary.rows_in, summary.rows_out, summary.rejected,
    )
    return summary


def _partial_summary(stage: Any, ctx: RunContext, plan: Any, started: float) -> StageSummary:
    """Counts over the shards that did finish (for the artifact of a failed stage)."""
    return stage_summary(stage.name, plan, stage.store(ctx).summarize(plan.key), started)


def _write_build_report(ctx: RunContext) -> list[str]:
    """The HTML build report (``reports/build.html``) linked from the summary; a report that
    cannot be drawn is logged, never fails a finished build."""
    try:
        from tasks.report.write import write_report

        write_report("build", ctx.run)
    except Exception as exc:  # noqa: BLE001 - the report is a convenience on top of the artifacts
        get_run_logger().warning("build report not written: %s: %s", exc.__class__.__name__, exc)
        return []
    return ["reports/build.html"]


def _run_stage(name: str, ctx: RunContext, force: bool) -> StageSummary:
    sub = stage_shards_flow.with_options(task_runner=task_runner_for(ctx.config))
    config = ctx.config.model_dump(mode="json")
    return sub(stage_name=name, config=config, run_dir=ctx.run.url, force=force, options=ctx.options)


@flow(name="reactbench-stage")
def stage_flow(
    stage_name: str,
    config: dict[str, Any] | str | None = None,
    run_dir: str = "runs/demo",
    force: bool = False,
    options: dict[str, Any] | None = None,
    overrides: dict[str, Any] | None = None,
) -> StageSummary:
    """One stage on its own (its upstream must be complete in ``run_dir``): reruns, partial rebuilds."""
    cfg = resolve_config(config, overrides)
    ctx = make_context(cfg, run_dir, options)
    with ray_session(cfg):
        return _run_stage(get_stage(stage_name).name, ctx, force)


@flow(name="reactbench-build")
def build_flow(
    config: dict[str, Any] | str | None = None,
    run_dir: str = "runs/demo",
    stages: list[str] | None = None,
    force: bool = False,
    options: dict[str, Any] | None = None,
    overrides: dict[str, Any] | None = None,
) -> list[StageSummary]:
    """All (or the selected) stages in order; publishes a markdown summary even when a stage fails."""
    cfg = resolve_config(config, overrides)
    check_before_build(cfg, stages)  # edit will run: stop before mine when it cannot (flows/cli_preflight.py)
    ctx = make_context(cfg, run_dir, options)
    summaries: list[StageSummary] = []
    failed: dict[str, str] = {}
    with ray_session(cfg):
        for name in select_stages(stages):
            try:
                summaries.append(_run_stage(name, ctx, force))
            except Exception as exc:
                failed[name] = f"{exc.__class__.__name__}: {exc}"
                break  # later stages read this one's output
    reports = [] if failed else _write_build_report(ctx)
    publish_build_summary(run_dir, summaries, failed, reports)
    if failed:
        stage, msg = next(iter(failed.items()))
        raise ShardFailed(f"build stopped at stage {stage!r}: {msg}")
    return summaries

"""Prefect flows: ``build`` (all stages) and ``stage`` (one); tasks work on shards, never single images.

The shard loop is ``tasks.engine.runner.run_stage``, as in local mode; Prefect supplies its mapper:
one recorded task per shard on the task runner (threads or Ray), Prefect's task retries (with
the runner's retry classification), Ray GPU reservations, and the artifacts.

Flow parameters are what a deployment in ``prefect.yaml`` sets: ``config`` (a YAML path, the
config as a mapping, or, called in process, the validated ``BuildConfig`` itself), ``run_dir``, ``stages``, ``force``, ``options`` (stage options such as
``no_cache``) and ``overrides`` (dotted config keys, e.g. ``{"mllm.base_url": "http://vllm:8000/v1"}``).

Failure handling: every shard of a stage is submitted; a shard that raises is retried
(``orchestration.retries`` times, ``retry_delay_s`` apart, transient errors only unless
``retry_transient_only`` is false) and, if it still fails, the other shards go on. The stage
then fails naming the missing shards; the build stops there (later stages read its output).
Finished shards carry completion markers, so rerunning the same build runs only what failed.

``build_flow`` runs the build chain of ``flows/chain.py`` (preflight, stages, build report), the
same chain as a local build; only the way one stage runs (a subflow here) is this module's.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NONE
from prefect.futures import as_completed
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from flows.artifacts import ProgressArtifact, publish_build_summary, publish_stage_table
from flows.chain import ChainMode, run_build_chain
from flows.config import BuildConfig, OrchestrationConfig, resolve_run_config
from flows.context import make_context, progress_for
from flows.stages import get_stage
from storage.fs import RunFS
from storage.run_lock import hold_run
from storage.stage_store import ShardMarker
from tasks.engine.base import RunContext
from tasks.engine.retries import RetryPolicy
from tasks.engine.runner import (
    ShardDone,
    ShardExecution,
    ShardFailed,
    ShardJob,
    ShardMapper,
    StageSummary,
    run_stage,
)

if TYPE_CHECKING:
    from prefect import Task
    from prefect.client.schemas.objects import State, TaskRun

# --- retries ---------------------------------------------------------------------------


def retry_condition(policy: RetryPolicy) -> Callable[[Task, TaskRun, State], bool]:
    """A Prefect ``retry_condition_fn`` that asks the runner's policy (``tasks.engine.retries``)."""

    def should_retry(task_obj: Task, task_run: TaskRun, state: State) -> bool:
        if not policy.transient_only:
            return True
        try:
            exc = state.result(raise_on_failure=False)
        except Exception as err:  # pragma: no cover - the result could not be read back
            exc = err
        return isinstance(exc, BaseException) and policy.should_retry(exc)

    return should_retry


# --- GPU slots -------------------------------------------------------------------------


@contextmanager
def _gpu_slot(limit: str) -> Iterator[None]:
    """Hold one slot of a Prefect global concurrency limit (strict: a missing limit is an error);
    the runner holds it around each GPU shard, besides the device lease."""
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
    retry_condition_fn=retry_condition(RetryPolicy()),
)
def process_shard_task(stage_name: str, index: int, job: ShardJob) -> ShardMarker:
    """Run one shard job of the runner (the unit Prefect records and retries).

    The job carries its stage as an object (pickled by reference to its class), so Ray workers
    run exactly the stage the driver planned; ``stage_name`` and ``index`` name the task run.
    """
    return job()


def prefect_mapper(orch: OrchestrationConfig) -> ShardMapper:
    """The runner's mapper in Prefect mode: one task per shard on the flow's task runner."""

    def run(jobs: list[ShardJob], retry: RetryPolicy, done: ShardDone) -> None:
        if not jobs:
            return
        shard_task = process_shard_task.with_options(
            retries=retry.retries, retry_delay_seconds=retry.delay_s, retry_condition_fn=retry_condition(retry)
        )
        ray = orch.task_runner == "ray"
        gpus = orch.gpus_per_edit_task if ray and jobs[0].stage.uses_gpu and orch.gpus_per_edit_task > 0 else 0
        with _ray_options(gpus) if ray else _nothing():
            futures = {id(f): (f, job) for job in jobs for f in [shard_task.submit(job.stage.name, job.index, job)]}
        for fut in as_completed([f for f, _ in futures.values()]):
            job = futures[id(fut)][1]
            try:
                fut.result()
            except Exception as exc:  # a failed shard never blocks the others
                done(job, exc)
            else:
                done(job, None)

    return run


# A shard whose Ray worker or node dies (a lost node, an OOM-killed process) is run again by Ray
# on a live node that has the resources, this many times; the shard's outputs are rewritten whole
# and its marker comes last, so a rerun neither loses nor doubles rows. Errors the shard raises
# are Prefect's retries (orchestration.retries), not these.
NODE_FAILURE_RETRIES = 3


@contextmanager
def _ray_options(gpus: float) -> Iterator[None]:
    """Ray options of the shard tasks: GPUs to reserve (0: none) and reruns after a lost worker or node."""
    from prefect_ray.context import remote_options

    with remote_options(max_retries=NODE_FAILURE_RETRIES, **({"num_gpus": gpus} if gpus else {})):
        yield


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def task_runner_for(config: BuildConfig) -> TaskRunner:
    """Threads (default, ``run.workers`` at once) or Ray via prefect-ray."""
    orch = config.orchestration
    if orch.task_runner == "ray":
        try:
            from prefect_ray import RayTaskRunner
        except ImportError as exc:  # pragma: no cover - the ray extra is part of test installs
            raise RuntimeError(
                "orchestration.task_runner 'ray' needs the ray extra: pip install 'reactbench-pipeline[ray]'"
            ) from exc
        return RayTaskRunner(address=orch.ray_address, init_kwargs=ray_init_kwargs(orch))
    return ThreadPoolTaskRunner(max_workers=config.run.workers)


def ray_init_kwargs(orch: OrchestrationConfig) -> dict[str, Any]:
    """``ray.init`` arguments: ``orch.ray_init``, no dashboard for a local instance (Ray refuses
    resource arguments when joining a cluster), and this build's Prefect API URL for the workers.

    Ray worker processes take the environment of their node's raylet, started before (and
    without) this build: without ``PREFECT_API_URL`` in the job's ``runtime_env`` a worker would
    start a throwaway Prefect server of its own and its task runs would never reach the build's.
    """
    kwargs: dict[str, Any] = dict(orch.ray_init) if orch.ray_address else {"include_dashboard": False, **orch.ray_init}
    api = prefect_api_url()
    if api:
        runtime_env = dict(kwargs.get("runtime_env") or {})
        env_vars = {"PREFECT_API_URL": api, **(runtime_env.get("env_vars") or {})}
        kwargs["runtime_env"] = {**runtime_env, "env_vars": env_vars}
    return kwargs


def prefect_api_url() -> str | None:
    """The Prefect API this process reports to: the active settings (profile, environment at
    import, ``temporary_settings``), else ``PREFECT_API_URL`` exported since; None when unset."""
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value() or os.environ.get("PREFECT_API_URL") or None


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


@flow(name="reactbench-stage-shards", flow_run_name="{stage_name}")
def stage_shards_flow(
    stage_name: str, config: BuildConfig, run_dir: str, force: bool = False, options: dict[str, Any] | None = None
) -> StageSummary:
    """Run one stage with the runner on this flow's task runner; publish counts and progress.

    ``config`` is the build's validated model, passed as it is: a subflow runs in the parent's
    process, so Prefect hands the object over (it only records its JSON form)."""
    ctx = RunContext(run=RunFS.open(run_dir), config=config, options=dict(options or {}))
    orch = ctx.config.orchestration
    terminal = progress_for(ctx.run.url, stage_name)
    artifact: list[ProgressArtifact] = []

    def progress(done: int, total: int) -> None:
        if not artifact:
            artifact.append(ProgressArtifact(stage_name, total=total, done=done))
        elif done > artifact[0].done:
            artifact[0].advance(done - artifact[0].done)
        if terminal:
            terminal(done, total)

    try:
        summary = run_stage(
            get_stage(stage_name),
            ctx,
            force=force,
            progress=progress,
            requeue_reasons=orch.rerun_reject_reasons,
            execution=ShardExecution(
                mapper=prefect_mapper(orch),
                retry=RetryPolicy.from_config(ctx.config),
                gpu_slot=partial(_gpu_slot, orch.gpu_concurrency_limit) if orch.gpu_concurrency_limit else None,
                logger=get_run_logger(),
            ),
        )
    except ShardFailed as exc:
        if exc.summary is not None:
            publish_stage_table(exc.summary)
        raise
    publish_stage_table(summary)
    return summary


def _run_stage(name: str, ctx: RunContext, force: bool) -> StageSummary:
    sub = stage_shards_flow.with_options(task_runner=task_runner_for(ctx.config))
    return sub(stage_name=name, config=ctx.config, run_dir=ctx.run.url, force=force, options=ctx.options)


@flow(name="reactbench-stage")
def stage_flow(
    stage_name: str,
    config: BuildConfig | dict[str, Any] | str | None = None,
    run_dir: str = "runs/demo",
    force: bool = False,
    options: dict[str, Any] | None = None,
    overrides: dict[str, Any] | None = None,
) -> StageSummary:
    """One stage on its own (its upstream must be complete in ``run_dir``): reruns, partial rebuilds."""
    with _run_lease(run_dir, f"prefect flow reactbench-stage ({stage_name})"):
        cfg = resolve_run_config(config, overrides, run_dir=run_dir)
        ctx = make_context(cfg, run_dir, options)
        with ray_session(cfg):
            return _run_stage(get_stage(stage_name).name, ctx, force)


@contextmanager
def _run_lease(run_dir: str, owner: str) -> Iterator[None]:
    """The run directory's write lease (storage/run_lock.py) for a flow run a worker started; a
    flow called by ``reactbench build``, which holds it already, gets a nested handle."""
    with hold_run(run_dir, owner, on_message=lambda m: get_run_logger().warning(m)):
        yield


@flow(name="reactbench-build")
def build_flow(
    config: BuildConfig | dict[str, Any] | str | None = None,
    run_dir: str = "runs/demo",
    stages: list[str] | None = None,
    force: bool = False,
    options: dict[str, Any] | None = None,
    overrides: dict[str, Any] | None = None,
) -> list[StageSummary]:
    """All (or the selected) stages in order; publishes a markdown summary even when a stage fails."""
    with _run_lease(run_dir, "prefect flow reactbench-build"):
        return _build(config, run_dir, stages, force, options, overrides)


class _RunLog:
    """The flow run's logger, looked up when a message is written (``build_flow.fn`` may run
    outside a flow run, up to its first message)."""

    def info(self, msg: str, *args: object) -> None:
        get_run_logger().info(msg, *args)

    def warning(self, msg: str, *args: object) -> None:
        get_run_logger().warning(msg, *args)


def _build(
    config: BuildConfig | dict[str, Any] | str | None,
    run_dir: str,
    stages: list[str] | None,
    force: bool,
    options: dict[str, Any] | None,
    overrides: dict[str, Any] | None,
) -> list[StageSummary]:
    """The build chain of ``flows/chain.py``, each stage a subflow on the config's task runner,
    inside one Ray session; the summary artifact is published also when a stage failed."""
    cfg = resolve_run_config(config, overrides, run_dir=run_dir)
    mode = ChainMode(
        lambda name, ctx: _run_stage(name, ctx, force),
        log=_RunLog(),
        around_stages=lambda: ray_session(cfg),
        on_end=lambda done: publish_build_summary(run_dir, done.summaries, done.failed, done.reports),
    )
    return run_build_chain(cfg, run_dir, stages, mode, options=options).summaries

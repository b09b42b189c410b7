"""Prefect flows: one per stage plus ``build``; tasks work on shards, never on single images.

The stage logic is the same as in local mode (``tasks.runner``); Prefect adds recorded runs,
retries of failed shard tasks, the task runner (threads or Ray) and artifacts.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NONE
from prefect.task_runners import ThreadPoolTaskRunner

from flows.config import BuildConfig, config_from_dict
from flows.runtime import make_context
from flows.stages import get_stage, select_stages
from tasks.base import RunContext
from tasks.runner import StagePlan, StageSummary, finish_stage, prepare_stage, run_one_shard


@task(name="process-shard", task_run_name="{stage_name}-shard-{index}", cache_policy=NONE, persist_result=False)
def process_shard_task(stage_name: str, ctx: RunContext, plan: StagePlan, index: int) -> dict[str, Any]:
    return run_one_shard(get_stage(stage_name), ctx, plan, index)


def _task_runner(config: BuildConfig):
    orch = config.orchestration
    if orch.task_runner == "ray":
        from prefect_ray import RayTaskRunner

        init_kwargs = {"include_dashboard": False}
        return RayTaskRunner(address=orch.ray_address, init_kwargs=init_kwargs)
    return ThreadPoolTaskRunner(max_workers=config.run.workers)


def _publish(summary: StageSummary) -> None:
    key = f"reactbench-{summary.stage}-counts"
    rows = [
        {"metric": "shards run", "value": summary.shards_run},
        {"metric": "shards skipped", "value": summary.shards_skipped},
        {"metric": "rows in", "value": summary.rows_in},
        *({"metric": f"rows out: {k}", "value": v} for k, v in summary.rows_out.items()),
        {"metric": "rejected", "value": summary.rejected},
        *({"metric": f"reject: {k}", "value": v} for k, v in sorted(summary.reject_reasons.items())),
    ]
    create_table_artifact(key=key, table=rows, description=f"reactbench stage {summary.stage}")


def run_stage_in_flow(stage_name: str, ctx: RunContext, force: bool) -> StageSummary:
    import time

    started = time.perf_counter()
    stage = get_stage(stage_name)
    plan = prepare_stage(stage, ctx, force=force)
    orch = ctx.config.orchestration
    shard_task = process_shard_task.with_options(retries=orch.retries, retry_delay_seconds=orch.retry_delay_s)
    if orch.task_runner == "ray" and stage_name == "edit" and orch.gpus_per_edit_task:
        from prefect_ray.context import remote_options

        with remote_options(num_gpus=orch.gpus_per_edit_task):
            futures = [shard_task.submit(stage_name, ctx, plan, i) for i in plan.todo]
    else:
        futures = [shard_task.submit(stage_name, ctx, plan, i) for i in plan.todo]
    failures = []
    for fut in futures:
        try:
            fut.result()
        except Exception as exc:  # a failed shard never blocks the others
            failures.append(exc)
    summary = finish_stage(stage, ctx, plan, started)
    _publish(summary)
    get_run_logger().info(
        "%s: %d shard(s) run, %d skipped, %d rows in, out %s, %d rejected",
        stage_name, summary.shards_run, summary.shards_skipped, summary.rows_in, summary.rows_out, summary.rejected,
    )
    return summary


@flow(name="reactbench-stage", flow_run_name="{stage_name}")
def stage_flow(stage_name: str, config: dict[str, Any], run_dir: str, force: bool = False, options: dict | None = None) -> StageSummary:
    """One stage; deployed on its own for reruns of a single stage."""
    cfg = config_from_dict(config)
    ctx = make_context(cfg, run_dir, options)
    return run_stage_in_flow(stage_name, ctx, force)


@flow(name="reactbench-build")
def build_flow(
    config: dict[str, Any], run_dir: str, stages: list[str] | None = None, force: bool = False, options: dict | None = None
) -> list[StageSummary]:
    """All stages in order, each a subflow whose shard tasks run on the configured task runner."""
    cfg = config_from_dict(config)
    summaries = []
    runner = _task_runner(cfg)
    for name in select_stages(stages):
        sub = stage_flow.with_options(task_runner=runner)
        summaries.append(sub(stage_name=name, config=config, run_dir=run_dir, force=force, options=options))
    lines = ["# reactbench build", "", f"Run directory: `{run_dir}`", "", "| stage | shards run | skipped | rows in | rows out | rejected |", "|---|---|---|---|---|---|"]
    for s in summaries:
        out = ", ".join(f"{k} {v}" for k, v in s.rows_out.items()) or "-"
        lines.append(f"| {s.stage} | {s.shards_run} | {s.shards_skipped} | {s.rows_in} | {out} | {s.rejected} |")
    create_markdown_artifact(key="reactbench-build-summary", markdown="\n".join(lines), description="reactbench build summary")
    return summaries

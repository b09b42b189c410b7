"""The Prefect flows on a real server: failure isolation, retries, reruns, GPU leases, artifacts."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
from orch_stages import CubeStage, GpuCubeStage

from flows.config import BuildConfig


@pytest.fixture(autouse=True)
def _register_stages(monkeypatch: pytest.MonkeyPatch) -> None:
    import flows.stages

    CubeStage.reset()
    monkeypatch.setitem(flows.stages._STAGE_CLASSES, "cube", "orch_stages:CubeStage")
    monkeypatch.setitem(flows.stages._STAGE_CLASSES, "gpucube", "orch_stages:GpuCubeStage")


def _config(**orch: Any) -> dict[str, Any]:
    base = {"retries": 1, "retry_delay_s": 0.0}
    base.update(orch)
    return BuildConfig.model_validate({"run": {"shard_size": 4, "workers": 2}, "orchestration": base}).model_dump(
        mode="json"
    )


def _table(artifact: Any) -> dict[str, Any]:
    import json

    data = artifact["data"]
    rows = json.loads(data) if isinstance(data, str) else data
    return {r["metric"]: r["value"] for r in rows}


def test_failed_shard_does_not_block_others_and_rerun_retries_only_it(tmp_path: Path, prefect_api: Any) -> None:
    from flows.prefect_flows import stage_flow
    from tasks.engine.runner import ShardFailed

    run_dir, cfg = str(tmp_path / "run"), _config()
    CubeStage.broken = {1}
    with pytest.raises(ShardFailed, match=r"shards \[1\] did not complete"):
        stage_flow(stage_name="cube", config=cfg, run_dir=run_dir, options={"n": 14})
    markers = sorted(p.name for p in (tmp_path / "run" / "cube" / "_shards").iterdir())
    assert markers == ["00000.json", "00002.json", "00003.json"]
    assert CubeStage.calls.count(1) == 1, "a ValueError is permanent: no retry"
    failed_table = _table(prefect_api.artifacts("reactbench-cube-counts")[0])
    assert failed_table["shards total"] == 4 and failed_table["shards run"] == 3

    CubeStage.broken, CubeStage.calls = set(), []
    summary = stage_flow(stage_name="cube", config=cfg, run_dir=run_dir, options={"n": 14})
    assert CubeStage.calls == [1], "the rerun runs only the shard that failed"
    assert summary.shards_run == 1 and summary.shards_skipped == 3
    assert summary.rows_out == {"cubes": 11} and summary.reject_reasons == {"multiple_of_five": 3}
    table = _table(prefect_api.artifacts("reactbench-cube-counts")[0])
    assert table["reject: multiple_of_five"] == 3 and table["rows out: cubes"] == 11
    progress = prefect_api.artifacts("reactbench-cube-progress")
    assert progress and float(progress[0]["data"]) == 100.0


def test_the_validated_config_reaches_the_shard_flow_without_a_json_round_trip(
    tmp_path: Path, prefect_api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flow and its per-stage subflow run in one process: the stage's RunContext holds the
    very model the caller validated, and nothing dumps it to JSON and validates it again."""
    import flows.config
    from flows.prefect_flows import stage_flow

    cfg = BuildConfig.model_validate(_config())
    seen: list[Any] = []
    plan = CubeStage.plan
    monkeypatch.setattr(CubeStage, "plan", lambda self, ctx: seen.append(ctx.config) or plan(self, ctx))

    def validated_again(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the config was validated again inside the flow")

    monkeypatch.setattr(flows.config, "config_from_dict", validated_again)
    summary = stage_flow(stage_name="cube", config=cfg, run_dir=str(tmp_path / "run"), options={"n": 14})
    assert summary.shards_run == 4
    assert seen and all(c is cfg for c in seen)


def test_rerun_retries_shards_holding_transient_item_failures(tmp_path: Path, prefect_api: Any) -> None:
    from flows.prefect_flows import stage_flow

    run_dir, cfg = str(tmp_path / "run"), _config()
    CubeStage.oom_items = {9}
    first = stage_flow(stage_name="cube", config=cfg, run_dir=run_dir, options={"n": 12})
    assert first.reject_reasons == {"multiple_of_five": 3, "out_of_memory": 1}
    CubeStage.oom_items, CubeStage.calls = set(), []
    second = stage_flow(stage_name="cube", config=cfg, run_dir=run_dir, options={"n": 12})
    assert CubeStage.calls == [2], "only the shard holding item 9 runs again"
    assert second.reject_reasons == {"multiple_of_five": 3} and second.rows_out == {"cubes": 9}
    CubeStage.calls = []
    third = stage_flow(stage_name="cube", config=cfg, run_dir=run_dir, options={"n": 12})
    assert third.all_skipped and CubeStage.calls == []


def test_transient_errors_are_retried_and_permanent_ones_fail_fast(tmp_path: Path, prefect_api: Any) -> None:
    from flows.prefect_flows import stage_flow

    CubeStage.flaky = {0, 2}
    summary = stage_flow(stage_name="cube", config=_config(retries=2), run_dir=str(tmp_path / "r"), options={"n": 12})
    assert summary.shards_run == 3 and summary.rows_out == {"cubes": 9}
    assert sorted(CubeStage.calls) == [0, 0, 1, 2, 2], "each flaky shard ran twice, the healthy one once"


def test_retry_everything_when_configured(tmp_path: Path, prefect_api: Any) -> None:
    from flows.prefect_flows import stage_flow
    from tasks.engine.runner import ShardFailed

    CubeStage.broken = {0}
    with pytest.raises(ShardFailed):
        stage_flow(
            stage_name="cube",
            config=_config(retries=2, retry_transient_only=False),
            run_dir=str(tmp_path / "r"),
            options={"n": 4},
        )
    assert CubeStage.calls == [0, 0, 0], "1 attempt + 2 retries"


def test_gpu_shards_hold_a_concurrency_slot_and_a_distinct_device(tmp_path: Path, prefect_api: Any) -> None:
    """Single-node multi-GPU: a global concurrency limit of 2 and two leased device indices."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate

    from flows.prefect_flows import stage_flow

    limit = f"gpu-test-{uuid.uuid4().hex[:8]}"

    async def create() -> None:
        async with get_client() as client:
            await client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=limit, limit=2))

    asyncio.run(create())
    GpuCubeStage.hold_s = 0.3
    cfg = _config(gpu_concurrency_limit=limit, gpu_devices=[0, 1], device_lock_dir=str(tmp_path / "locks"))
    cfg["run"]["workers"] = 4
    run_dir = tmp_path / "g"
    summary = stage_flow(stage_name="gpucube", config=cfg, run_dir=str(run_dir), options={"n": 24})
    assert summary.shards_run == 6
    assert GpuCubeStage.overlaps == [], "two shards never held the same device at once"
    import pyarrow.parquet as pq

    devices = set()
    for part in sorted((run_dir / "gpucube" / "cubes").glob("part-*.parquet")):
        devices |= set(pq.read_table(part).column("device").to_pylist())
    assert devices <= {"cuda:0", "cuda:1"} and devices, devices


def test_missing_concurrency_limit_is_a_clear_error(tmp_path: Path, prefect_api: Any) -> None:
    from flows.prefect_flows import stage_flow
    from tasks.engine.runner import ShardFailed

    with pytest.raises(ShardFailed, match="prefect gcl create no-such-limit"):
        stage_flow(
            stage_name="gpucube",
            config=_config(gpu_concurrency_limit="no-such-limit"),
            run_dir=str(tmp_path / "m"),
            options={"n": 4},
        )


def test_cli_progress_follows_the_shards_of_a_prefect_run(
    tmp_path: Path, prefect_api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run in this process through Prefect (as the CLI does with an API configured): the terminal's
    progress callback sees every shard, while the flow parameters stay serialisable."""
    from flows.config import config_from_dict
    from flows.runtime import run_pipeline

    seen: dict[str, list[tuple[int, int]]] = {}

    def factory(stage: str):
        return lambda done, total: seen.setdefault(stage, []).append((done, total))

    import flows.stages

    monkeypatch.setattr(flows.stages, "STAGE_ORDER", ("cube",))
    result = run_pipeline(
        config_from_dict(_config()),
        str(tmp_path / "run"),
        ["cube"],
        orchestrator="prefect",
        options={"n": 14},
        progress=factory,
    )
    assert result.orchestrator == "prefect" and result.summaries[0].shards_run == 4
    assert seen["cube"][0] == (0, 4) and seen["cube"][-1] == (4, 4) and len(seen["cube"]) == 5


def test_a_flow_run_started_by_a_worker_holds_the_run_lease(tmp_path: Path, prefect_api: Any) -> None:
    """Deployments run the flows without the CLI: the flow itself takes the lease, so a flow run
    on a directory another process writes fails naming it, and a CLI build that holds the lease
    runs the same flow in process through a nested handle."""
    from lock_holder import held_by_another_process

    from flows.prefect_flows import stage_flow
    from storage.run_lock import RunLocked, hold_run

    run_dir, cfg = tmp_path / "run", _config()
    with held_by_another_process(run_dir) as holder:
        with pytest.raises(RunLocked, match=f"pid {holder.pid}"):
            stage_flow(stage_name="cube", config=cfg, run_dir=str(run_dir), options={"n": 6})
    assert CubeStage.calls == [], "no shard ran under another writer's lease"
    with hold_run(str(run_dir), "reactbench build", reentrant=True):  # what the CLI's lock wrapper takes
        summary = stage_flow(stage_name="cube", config=cfg, run_dir=str(run_dir), options={"n": 6})
    assert summary.shards_run == 2

"""GPU placement and retries belong to the runner: a local build (no Prefect) leases devices
from ``orchestration.gpu_devices`` and retries transient errors exactly like a Prefect build
(``test_orch_flows.py`` checks the Prefect side with the same stages)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from orch_stages import CubeStage, GpuCubeStage

from flows.config import BuildConfig


@pytest.fixture(autouse=True)
def _register_stages(monkeypatch: pytest.MonkeyPatch) -> None:
    import flows.stages

    CubeStage.reset()
    monkeypatch.setitem(flows.stages._STAGE_CLASSES, "cube", "orch_stages:CubeStage")
    monkeypatch.setitem(flows.stages._STAGE_CLASSES, "gpucube", "orch_stages:GpuCubeStage")
    monkeypatch.setattr(flows.stages, "STAGE_ORDER", ("cube", "gpucube"))


def _config(**orch: Any) -> BuildConfig:
    base = {"retries": 1, "retry_delay_s": 0.0}
    base.update(orch)
    return BuildConfig.model_validate({"run": {"shard_size": 4, "workers": 4}, "orchestration": base})


def _devices(run_dir: Path, stage: str) -> list[str]:
    return [
        d
        for p in sorted((run_dir / stage / "cubes").glob("part-*.parquet"))
        for d in pq.read_table(p).column("device").to_pylist()
    ]


def test_local_build_leases_a_distinct_device_per_gpu_shard(tmp_path: Path) -> None:
    from flows.runtime import run_pipeline

    GpuCubeStage.hold_s = 0.2
    cfg = _config(gpu_devices=[0, 1], device_lock_dir=str(tmp_path / "locks"))
    result = run_pipeline(cfg, str(tmp_path / "run"), ["gpucube"], orchestrator="local", options={"n": 24})
    assert result.orchestrator == "local" and result.summaries[0].shards_run == 6
    assert GpuCubeStage.overlaps == [], "two shards never held the same device at once"
    devices = _devices(tmp_path / "run", "gpucube")
    assert len(devices) == 19 and set(devices) == {"cuda:0", "cuda:1"}, "4 threads, 2 devices: both leased"

    # Every row's node and GPU are recorded beside it (the shard markers), matching the device it got.
    from storage.fs import RunFS
    from tasks.engine.placement import attempts, row_placement

    run = RunFS.open(str(tmp_path / "run"))
    rows = row_placement(run, "gpucube", "cubes", "id")
    by_id = {
        str(r["id"]): r
        for p in sorted((tmp_path / "run" / "gpucube" / "cubes").glob("part-*.parquet"))
        for r in pq.read_table(p).to_pylist()
    }
    assert len(rows) == 19 and all(r["node"] == socket.gethostname() for r in rows)
    assert all(r["device"] == by_id[r["id"]]["device"] == f"cuda:{r['gpus'][0]}" for r in rows)
    assert sorted(a["shard"] for a in attempts(run, "gpucube")) == list(range(6)), "one start recorded per shard"


def test_local_build_places_only_stages_that_use_a_gpu(tmp_path: Path) -> None:
    from flows.runtime import run_pipeline

    cfg = _config(gpu_devices=[0, 1], device_lock_dir=str(tmp_path / "locks"))
    run_pipeline(cfg, str(tmp_path / "run"), ["cube"], orchestrator="local", options={"n": 8})
    assert set(_devices(tmp_path / "run", "cube")) == {"-"}
    run_pipeline(_config(), str(tmp_path / "nogpu"), ["gpucube"], orchestrator="local", options={"n": 8})
    assert set(_devices(tmp_path / "nogpu", "gpucube")) == {"-"}, "no gpu_devices: the shard picks its own device"


def test_local_build_retries_transient_errors_and_keeps_tracebacks_of_final_failures(tmp_path: Path) -> None:
    from flows.runtime import run_pipeline
    from tasks.engine.runner import ShardFailed

    CubeStage.flaky, CubeStage.broken = {0}, {2}
    with pytest.raises(ShardFailed, match=r"shards \[2\] did not complete") as err:
        run_pipeline(_config(retries=2), str(tmp_path / "run"), ["cube"], orchestrator="local", options={"n": 12})
    assert "shard 2: ValueError: shard 2: malformed input" in str(err.value)
    assert sorted(CubeStage.calls) == [0, 0, 1, 2], "the flaky shard ran twice, the broken one once (permanent)"
    errors = sorted(p.name for p in (tmp_path / "run" / "cube" / "_errors").iterdir())
    assert errors == ["shard-00002.txt"], "the retried shard's traceback went away when its retry succeeded"
    assert "process_shard" in (tmp_path / "run" / "cube" / "_errors" / "shard-00002.txt").read_text()

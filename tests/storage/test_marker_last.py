"""The completion marker is written last: a shard whose outputs or rejects could not be written
is never counted as done, and a rerun recomputes it (nothing lost, nothing silently dropped)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from flows.config import config_from_dict
from storage.fs import RunFS
from storage.parquet_io import ArtifactError
from storage.rejects import reject
from storage.schemas import ArtifactSchema
from storage.stage_store import ShardResult, StageStore
from tasks.engine.base import RunContext, Stage
from tasks.engine.runner import ShardFailed, run_stage

TOY = ArtifactSchema("toy", 1, pa.schema([pa.field("id", pa.string(), nullable=False), pa.field("value", pa.int64())]))


def _result(i: int) -> ShardResult:
    res = ShardResult(outputs={"toy": [{"id": f"r{i}", "value": i}]}, rows_in=2)
    res.rejects.append(reject(f"bad{i}", "toystage", "malformed_entry", "field x"))
    return res


@pytest.fixture(params=["local", "memory", "s3"])
def run(request, tmp_path) -> RunFS:
    """The same storage code on a local folder, fsspec's memory store and a real S3 API (moto)."""
    if request.param == "local":
        return RunFS.open(str(tmp_path / "run"))
    if request.param == "s3":
        return RunFS.open(request.getfixturevalue("s3_run_url"))
    return RunFS.open(f"memory://marker-{uuid.uuid4().hex}")


def test_rejects_that_cannot_be_written_leave_no_marker(run: RunFS):
    store = StageStore(run, "toystage", {"toy": TOY})
    res = _result(0)
    res.rejects.append({"id": "broken", "stage": "toystage"})  # no reason: the rejects table refuses it
    with pytest.raises(ArtifactError, match="rejects"):
        store.write_shard(0, "k", res)
    assert store.marker(0) is None


def test_a_write_fault_on_the_rejects_folder_leaves_no_marker(tmp_path: Path):
    run = RunFS.open(str(tmp_path / "run"))
    store = StageStore(run, "toystage", {"toy": TOY})
    run.makedirs("toystage")
    (tmp_path / "run" / "toystage" / "rejects").write_text(
        "a file where the rejects folder goes"
    )  # a real OS-level fault
    with pytest.raises(OSError):
        store.write_shard(0, "k", _result(0))
    assert store.marker(0) is None


def test_a_write_fault_on_an_output_leaves_no_marker(tmp_path: Path):
    run = RunFS.open(str(tmp_path / "run"))
    store = StageStore(run, "toystage", {"toy": TOY})
    run.makedirs("toystage")
    (tmp_path / "run" / "toystage" / "toy").write_text("blocked")
    with pytest.raises(OSError):
        store.write_shard(0, "k", _result(0))
    assert store.marker(0) is None


class ToyStage(Stage):
    name = "toystage"
    outputs = {"toy": TOY}
    upstream = ()

    def config_section(self, ctx: RunContext) -> Any:
        return {"n": 2}

    def plan(self, ctx: RunContext) -> list[Any]:
        return [0, 1]

    def process_shard(self, ctx: RunContext, index: int, work: Any) -> ShardResult:
        return _result(work)


def test_runner_counts_a_shard_done_only_with_its_rejects_and_a_rerun_recovers_them(tmp_path: Path):
    root = tmp_path / "run"
    ctx = RunContext(RunFS.open(str(root)), config_from_dict({"run": {"workers": 1}}))
    ctx.run.makedirs("toystage")
    blocker = root / "toystage" / "rejects"
    blocker.write_text("fault")
    with pytest.raises(ShardFailed):
        run_stage(ToyStage(), ctx)
    store = ToyStage().store(ctx)
    assert store.markers() == []  # neither shard claims to be done without its rejects
    blocker.unlink()
    summary = run_stage(ToyStage(), ctx)
    assert summary.shards_run == 2 and summary.rejected == 2 and store.reader("rejects").count() == 2

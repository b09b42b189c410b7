"""The stage runner: skip finished shards, recompute on config/input change, isolate failing shards."""

from __future__ import annotations

import uuid
from typing import Any

import pyarrow as pa
import pytest

from flows.config import BuildConfig
from storage.fs import RunFS
from storage.rejects import reject
from storage.schemas import ArtifactSchema
from tasks.engine.base import RunContext, ShardResult, Stage, UpstreamMissing, chunk
from tasks.engine.runner import ShardFailed, run_stage

NUMBERS = ArtifactSchema("numbers", 1, pa.schema([pa.field("id", pa.string(), nullable=False), pa.field("square", pa.int64())]))


class SquareStage(Stage):
    """Squares the integers 0..n-1; odd multiples of 7 are rejects; a poisoned value raises."""

    name = "square"
    outputs = {"numbers": NUMBERS}
    calls: list[int] = []
    poison: set[int] = set()

    def config_section(self, ctx: RunContext) -> Any:
        return {"n": ctx.options["n"], "shard_size": ctx.config.run.shard_size}

    def input_fingerprints(self, ctx: RunContext) -> dict[str, str]:
        return {"range": str(ctx.options["n"])}

    def plan(self, ctx: RunContext) -> list[Any]:
        return chunk(list(range(ctx.options["n"])), ctx.config.run.shard_size)

    def process_shard(self, ctx: RunContext, index: int, work: Any) -> ShardResult:
        type(self).calls.append(index)
        if set(work) & type(self).poison:
            raise RuntimeError("poisoned shard")
        res = ShardResult(rows_in=len(work))
        for v in work:
            if v % 7 == 0 and v % 2:
                res.rejects.append(reject(str(v), self.name, "odd_multiple_of_seven"))
            else:
                res.outputs.setdefault("numbers", []).append({"id": str(v), "square": v * v})
        return res


class ChildStage(SquareStage):
    name = "child"
    upstream = ("square",)

    def input_fingerprints(self, ctx: RunContext) -> dict[str, str]:
        return Stage.input_fingerprints(self, ctx)


@pytest.fixture
def ctx(tmp_path) -> RunContext:
    SquareStage.calls = []
    SquareStage.poison = set()
    cfg = BuildConfig.model_validate({"run": {"shard_size": 4, "workers": 2}})
    return RunContext(run=RunFS.open(f"memory://runner-{uuid.uuid4().hex}"), config=cfg, options={"n": 22})


def test_run_then_rerun_skips_every_shard(ctx: RunContext) -> None:
    first = run_stage(SquareStage(), ctx)
    assert first.shards_total == 6 and first.shards_run == 6
    assert first.rows_out == {"numbers": 20} and first.reject_reasons == {"odd_multiple_of_seven": 2}
    SquareStage.calls = []
    second = run_stage(SquareStage(), ctx)
    assert second.all_skipped and SquareStage.calls == []
    manifest = SquareStage().store(ctx).read_manifest()
    assert manifest["status"] == "complete" and manifest["counts"]["numbers"] == 20 and manifest["completed_shards"] == list(range(6))


def test_changed_input_recomputes_and_prunes_old_shards(ctx: RunContext) -> None:
    run_stage(SquareStage(), ctx)
    ctx.options["n"] = 9
    again = run_stage(SquareStage(), ctx)
    assert again.shards_run == 3 and again.rows_out == {"numbers": 8}
    assert SquareStage().store(ctx).reader("numbers").count() == 8


def test_failed_shard_does_not_block_others_and_rerun_retries_only_it(ctx: RunContext) -> None:
    SquareStage.poison = {9}
    with pytest.raises(ShardFailed, match="shard 2: RuntimeError: poisoned") as err:
        run_stage(SquareStage(), ctx)
    assert "Traceback" not in str(err.value)
    assert "process_shard" in ctx.run.read_text("square/_errors/shard-00002.txt")  # the traceback is kept for the curious
    store = SquareStage().store(ctx)
    assert [m["shard"] for m in store.markers()] == [0, 1, 3, 4, 5]
    SquareStage.poison, SquareStage.calls = set(), []
    run_stage(SquareStage(), ctx)
    assert SquareStage.calls == [2] and not ctx.run.exists("square/_errors")


def test_downstream_refuses_to_run_before_upstream(ctx: RunContext) -> None:
    with pytest.raises(UpstreamMissing, match="reactbench square"):
        run_stage(ChildStage(), ctx)
    run_stage(SquareStage(), ctx)
    assert run_stage(ChildStage(), ctx).shards_run == 6


def test_force_recomputes(ctx: RunContext) -> None:
    run_stage(SquareStage(), ctx)
    SquareStage.calls = []
    assert run_stage(SquareStage(), ctx, force=True).shards_run == 6


def test_identical_failures_are_reported_once_with_their_shards() -> None:
    from tasks.engine.runner import describe_failures

    text = describe_failures([(i, "ValueError: eval.embedding_model: /x not found") for i in range(12)] + [(3, "KeyError: 'w'")])
    assert text.count("embedding_model") == 1 and "shards 0, 1, 2, 3, 4, 5, 6, 7 and 4 more" in text
    assert "shard 3: KeyError: 'w'" in text

"""The stage runner: skip finished shards, recompute on config/input change, isolate failing shards."""

from __future__ import annotations

import json
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

NUMBERS = ArtifactSchema(
    "numbers", 1, pa.schema([pa.field("id", pa.string(), nullable=False), pa.field("square", pa.int64())])
)


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
    assert (
        manifest["status"] == "complete"
        and manifest["counts"]["numbers"] == 20
        and manifest["completed_shards"] == list(range(6))
    )


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
    assert "process_shard" in ctx.run.read_text(
        "square/_errors/shard-00002.txt"
    )  # the traceback is kept for the curious
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

    text = describe_failures(
        [(i, "ValueError: eval.embedding_model: /x not found") for i in range(12)] + [(3, "KeyError: 'w'")]
    )
    assert text.count("embedding_model") == 1 and "shards 0, 1, 2, 3, 4, 5, 6, 7 and 4 more" in text
    assert "shard 3: KeyError: 'w'" in text


def _flip_a_byte(run: RunFS, rel: str) -> None:
    """Change a file in place, keeping its name and size (what a listing cannot see)."""
    data = bytearray(run.read_bytes(rel))
    data[len(data) // 2] ^= 0x01
    run.fs.pipe_file(run.path(rel), bytes(data))


def test_a_finished_shard_whose_files_went_missing_or_changed_is_recomputed(ctx: RunContext) -> None:
    """Issue 31.4: a marker is checked against the files it names (count, size, sha256), never
    trusted alone; a deleted or edited file used to be read as an empty or other output."""
    first = run_stage(SquareStage(), ctx)
    store = SquareStage().store(ctx)
    manifest = store.read_manifest()
    assert sorted(manifest["files"]) == sorted(
        f"square/{a}/part-{i:05d}.parquet" for a in ("numbers", "rejects") for i in range(6)
    )
    ctx.run.rm("square/numbers/part-00002.parquet")
    _flip_a_byte(ctx.run, "square/rejects/part-00004.parquet")  # same size: only its sha256 tells
    ctx.run.fs.pipe_file(
        ctx.run.path("square/numbers/part-00001-copy.parquet"), ctx.run.read_bytes("square/numbers/part-00001.parquet")
    )
    assert store.finished_damage() == [  # what `reactbench status` shows: one listing, no read
        "square/numbers/part-00002.parquet is missing",
        "square/numbers/part-00001-copy.parquet is a shard file that no marker names",
    ]
    SquareStage.calls = []
    again = run_stage(SquareStage(), ctx)
    assert sorted(SquareStage.calls) == [2, 4] and again.shards_run == 2 and again.rows_out == first.rows_out
    assert (
        "recomputed 2 finished shard(s) whose files did not match their markers: square/numbers/part-00002.parquet is missing"
        in again.extra["note"]
    )
    assert "square/rejects/part-00004.parquet was changed" in again.extra["note"]
    after = store.read_manifest()
    assert after["output_fingerprint"] == manifest["output_fingerprint"] and after["files"] == manifest["files"]
    assert not ctx.run.exists("square/numbers/part-00001-copy.parquet") and store.finished_damage() == []
    SquareStage.calls = []
    assert run_stage(SquareStage(), ctx).all_skipped and SquareStage.calls == []


def test_a_stage_refuses_to_read_a_damaged_upstream_stage(ctx: RunContext) -> None:
    run_stage(SquareStage(), ctx)
    run_stage(ChildStage(), ctx)
    ctx.run.rm("square/numbers/part-00000.parquet")
    with pytest.raises(
        UpstreamMissing,
        match=r"reads 'square', whose finished output is damaged in .*: square/numbers/part-00000.parquet is missing; run `reactbench square",
    ):
        run_stage(ChildStage(), ctx)
    run_stage(SquareStage(), ctx)  # recomputes the shard: the same bytes, so the child has nothing to do
    assert run_stage(ChildStage(), ctx).all_skipped


def test_markers_written_before_they_named_their_files_are_checked_by_name(ctx: RunContext) -> None:
    """A run built before markers recorded their files: the first rebuild keeps every fingerprint
    (nothing downstream recomputes) and already finds a missing file by the names its marker implies."""
    run_stage(SquareStage(), ctx)
    store = SquareStage().store(ctx)
    for m in store.markers():
        m.pop("files")
        ctx.run.write_text_atomic(f"square/_shards/{m['shard']:05d}.json", json.dumps(m))
    manifest = store.read_manifest()
    fingerprint = manifest.pop("output_fingerprint")
    manifest.pop("files")
    store.write_manifest({**manifest, "output_fingerprint": fingerprint})
    assert (
        store.output_fingerprint() == fingerprint
    )  # the fingerprint from the files read equals the one from the markers
    ctx.run.rm("square/rejects/part-00003.parquet")
    assert store.finished_damage() == [
        "square/rejects/part-00003.parquet is missing"
    ]  # found by the names the markers imply
    SquareStage.calls = []
    again = run_stage(SquareStage(), ctx)
    assert SquareStage.calls == [3] and store.read_manifest()["output_fingerprint"] == fingerprint
    assert "square/rejects/part-00003.parquet is missing" in again.extra["note"]

"""The mine stage through the real runner: artifacts, skipping, byte-identical reruns, source errors."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from mining_helpers import SAMPLE_MINE

from flows.config import config_from_dict
from storage.fs import RunFS
from storage.parquet_io import ArtifactReader
from storage.schemas import CANDIDATES
from tasks.engine.base import RunContext
from tasks.engine.runner import run_stage
from tasks.stages.mine import MineSourceMissing, MineStage


def _ctx(run_dir: Path, sample_dir: Path, **mine) -> RunContext:
    cfg = config_from_dict(
        {
            "sources": {"visual_genome": str(sample_dir / "visual_genome"), "fsc147": str(sample_dir / "fsc147")},
            "mine": {**SAMPLE_MINE, **mine},
        }
    )
    return RunContext(RunFS.open(str(run_dir)), cfg)


def _hashes(run_dir: Path) -> dict[str, str]:
    return {
        str(p.relative_to(run_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((run_dir / "mine").rglob("*.parquet"))
    }


@pytest.fixture(scope="module")
def mined_run(tmp_path_factory, sample_dir: Path):
    run_dir = tmp_path_factory.mktemp("run")
    ctx = _ctx(run_dir, sample_dir)
    return run_dir, ctx, run_stage(MineStage(), ctx)


def test_stage_writes_all_three_artifacts_and_rejects(mined_run) -> None:
    run_dir, ctx, summary = mined_run
    assert (
        summary.shards_total == 2 and summary.rows_out["pair_stats"] >= 8 and summary.rows_out["attribute_stats"] >= 30
    )
    rows = ArtifactReader(ctx.run, "mine/candidates", CANDIDATES).rows()
    tasks = {r["task"] for r in rows}
    assert tasks == {"relational_erasure", "counterfactual_attribute", "alteration_tracing", "dense_counting"}
    assert sum(r["task"] == "relational_erasure" for r in rows) >= 24
    assert {
        "unknown_image_id",
        "box_outside_image",
        "duplicate_object_id",
        "malformed_entry",
        "missing_class",
        "missing_image",
    } <= set(summary.reject_reasons)
    manifest = MineStage().store(ctx).read_manifest()
    assert manifest["status"] == "complete"
    assert any(k.endswith("objects.json") and v.startswith("size=") for k, v in manifest["input_fingerprints"].items())
    assert manifest["extra"]["candidates_by_task"]["relational_erasure/targeted"] >= 24


def test_rerun_skips_and_other_run_dir_is_byte_identical(mined_run, tmp_path: Path, sample_dir: Path) -> None:
    run_dir, ctx, _ = mined_run
    again = run_stage(MineStage(), ctx)
    assert again.all_skipped
    other = tmp_path / "other"
    run_stage(MineStage(), _ctx(other, sample_dir))
    assert _hashes(other) == _hashes(run_dir)


def test_changed_threshold_or_source_file_remines(tmp_path: Path, sample_dir: Path) -> None:
    ctx = _ctx(tmp_path / "r", sample_dir, tasks=["dense_counting"])
    assert run_stage(MineStage(), ctx).shards_run == 1
    assert run_stage(MineStage(), ctx).all_skipped
    changed = _ctx(
        tmp_path / "r",
        sample_dir,
        tasks=["dense_counting"],
        dense_counting={"count_range": [5, 60], "bins": [5, 30, 60], "per_bin": 2},
    )
    assert run_stage(MineStage(), changed).shards_run == 1
    classes = sample_dir / "fsc147" / "ImageClasses_FSC147.txt"
    st = os.stat(classes)
    try:
        os.utime(classes, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
        assert run_stage(MineStage(), changed).shards_run == 1
    finally:
        os.utime(classes, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_missing_source_config_is_named(tmp_path: Path) -> None:
    ctx = RunContext(RunFS.open(str(tmp_path)), config_from_dict({"mine": {"tasks": ["relational_erasure"]}}))
    with pytest.raises(MineSourceMissing, match="sources.visual_genome"):
        run_stage(MineStage(), ctx)


def test_arrow_outputs_are_checked_against_the_schema(tmp_path: Path) -> None:
    """Statistics reach the writer as Arrow tables: same schema checks as rows, column by column."""
    import pyarrow as pa

    from storage.parquet_io import ArtifactError, table_from_output, table_from_rows
    from storage.schemas import PAIR_STATS

    row = {
        "source": "visual_genome",
        "a": "skateboard",
        "b": "wheel",
        "c_a": 3,
        "c_b": 9,
        "c_ab": 3,
        "p_b_given_a": 1.0,
        "p_a_given_b": 1 / 3,
        "predicate": "on",
        "direction": "b_subject",
        "kept": True,
    }
    table = pa.table({k: [v] for k, v in row.items()})  # int64 / double / bool inferred; rank-free schema
    assert table_from_output(PAIR_STATS, table).equals(table_from_rows(PAIR_STATS, [row]))
    assert table_from_output(PAIR_STATS, table).schema.metadata == PAIR_STATS.with_metadata().metadata
    with pytest.raises(ArtifactError, match=r"columns not in schema 'pair_stats'.*'colour'"):
        table_from_output(PAIR_STATS, table.append_column("colour", pa.array(["red"])), "mine/pair_stats shard 0")
    with pytest.raises(ArtifactError, match=r"required field 'c_ab' has 1 null"):
        table_from_output(PAIR_STATS, table.set_column(5, "c_ab", pa.array([None], pa.int64())))
    with pytest.raises(ArtifactError, match=r"missing required field 'kept'"):
        table_from_output(PAIR_STATS, table.drop_columns(["kept"]))
    with pytest.raises(ArtifactError, match=r"field 'c_a' has type string"):
        table_from_output(PAIR_STATS, table.set_column(3, "c_a", pa.array(["three"])))


def test_stats_artifacts_equal_the_miner_tables(mined_run) -> None:
    from mining_helpers import mine_config

    from miners.mine import mine_visual_genome

    run_dir, ctx, _ = mined_run
    res = mine_visual_genome(str(ctx.config.sources.visual_genome), mine_config(), seed=ctx.seed)
    assert ArtifactReader(ctx.run, "mine/pair_stats", "pair_stats").rows() == res.pair_stats
    assert ArtifactReader(ctx.run, "mine/attribute_stats", "attribute_stats").rows() == res.attribute_stats

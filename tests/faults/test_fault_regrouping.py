"""Fault injection: settings that regroup items, changed on a finished run.

Shard markers are found by index. Before the plan was part of the stage key, raising
``run.shard_size`` from 16 to 32 on a finished demo run kept the first shards' markers (now
naming other items) and lost 96 of 186 instructions; lowering it to 12 duplicated rows. Now a
rebuild equals, byte for byte, a fresh build with the new setting, review queue included.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from rebuild_helpers import artifacts, assert_same_build, build, copy_run, demo_config

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("size", [32, 12], ids=["up-16-to-32", "down-16-to-12"])
def test_a_new_shard_size_rebuilds_to_a_fresh_build(
    size: int, demo_run: Path, sample_dir: Path, tmp_path: Path
) -> None:
    run = copy_run(demo_run, tmp_path / "run")
    summaries = build(demo_config(sample_dir, shard_size=size), run)
    # every regrouped stage ran again, its items from the reuse store (nothing recomputed)
    for name in ("instruct", "edit", "qa", "review"):
        assert summaries[name].shards_skipped == 0 and summaries[name].shards_run == summaries[name].shards_total, name
    assert summaries["edit"].items_computed == 0 and summaries["edit"].items_reused > 0
    fresh = tmp_path / "fresh"
    build(demo_config(sample_dir, shard_size=size), fresh)
    assert_same_build(run, fresh)
    assert len([k for k in artifacts(run) if k.startswith("qa/questions/")]) != len(
        [k for k in artifacts(demo_run) if k.startswith("qa/questions/")]
    )


def test_a_new_shard_size_reevaluates_to_a_fresh_evaluation(demo_run: Path, sample_dir: Path, tmp_path: Path) -> None:
    """``reactbench eval`` shards questions by ``run.shard_size`` too (never splitting an item)."""
    from storage.fs import RunFS
    from tasks.release.evaluate.run import EvalRequest, run_eval

    run, fresh = copy_run(demo_run, tmp_path / "run"), copy_run(demo_run, tmp_path / "fresh")
    first = run_eval(
        RunFS.open(str(run)), demo_config(sample_dir, shard_size=16), EvalRequest("rules:rules-v1", unverified=True)
    )
    again = run_eval(
        RunFS.open(str(run)), demo_config(sample_dir, shard_size=12), EvalRequest("rules:rules-v1", unverified=True)
    )
    assert again.stage.shards_total > first.stage.shards_total and again.stage.shards_skipped == 0
    run_eval(
        RunFS.open(str(fresh)), demo_config(sample_dir, shard_size=12), EvalRequest("rules:rules-v1", unverified=True)
    )
    folder = [again.folder]
    got, want = artifacts(run, folder), artifacts(fresh, folder)
    assert got and got == want
    assert (run / again.folder / "metrics.json").read_bytes() == (fresh / again.folder / "metrics.json").read_bytes()


def test_a_new_edit_batch_size_regroups_nothing_that_is_kept(demo_run: Path, sample_dir: Path, tmp_path: Path) -> None:
    """``edit.batch_size`` groups items into editor calls inside a shard and stays out of the
    stage key: a finished run keeps its edits, and they are the edits a fresh build with the new
    batch size computes (each item edited alone gives the same bytes)."""
    cfg = demo_config(sample_dir, {"edit": {"batch_size": 1}})
    run = copy_run(demo_run, tmp_path / "run")
    assert build(cfg, run)["edit"].all_skipped
    fresh = copy_run(demo_run, tmp_path / "fresh")
    for name in ("edit", "qa", "review", "reuse"):
        shutil.rmtree(fresh / name)
    summaries = build(cfg, fresh)
    assert summaries["edit"].items_computed == summaries["edit"].rows_in > 0 and summaries["edit"].items_reused == 0
    assert_same_build(fresh, run)

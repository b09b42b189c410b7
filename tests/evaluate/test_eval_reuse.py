"""Evaluation answers come from the reuse store when only non-answer settings changed (issue 18)."""

from __future__ import annotations

from eval_helpers import write_run

from flows.config import BuildConfig
from storage.parquet_io import ArtifactReader
from tasks.release.evaluate.run import EvalRequest, run_eval
from tasks.release.evaluate.schemas import ANSWERS


def test_eval_answers_are_reused_after_a_stage_key_change(tmp_path):
    run = write_run(tmp_path / "run")
    first = run_eval(
        run, BuildConfig.model_validate({"run": {"shard_size": 8, "workers": 1}}), EvalRequest("rules:rules-v1")
    )
    n = first.stage.rows_out["answers"]
    assert n > 0 and first.stage.items_computed == n and first.stage.items_reused == 0
    before = ArtifactReader(run, f"{first.folder}/answers", ANSWERS).rows()

    # sub-causes off: a new stage key (the stage resets), the same questions and model
    cfg = BuildConfig.model_validate({"run": {"shard_size": 8, "workers": 1}, "eval": {"subcauses": False}})
    second = run_eval(run, cfg, EvalRequest("rules:rules-v1"))
    assert second.stage.shards_run == second.stage.shards_total > 0
    assert (second.stage.items_reused, second.stage.items_computed) == (n, 0)
    assert ArtifactReader(run, f"{second.folder}/answers", ANSWERS).rows() == before

    forced = run_eval(run, cfg, EvalRequest("rules:rules-v1", force=True))
    assert (forced.stage.items_reused, forced.stage.items_computed) == (0, n)
    assert ArtifactReader(run, f"{forced.folder}/answers", ANSWERS).rows() == before

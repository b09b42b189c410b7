"""``metrics.json`` is computed from a projection of the answer rows (``run.METRIC_COLUMNS``, read
shard by shard with repeated values shared): it must equal the metrics of the full rows, so a
metric that starts reading another column fails here instead of silently reading None."""

from __future__ import annotations

from eval_helpers import write_run

from storage.parquet_io import ArtifactReader
from tasks.release.evaluate.run import EvalRequest, run_eval, span_summary, subcause_distribution
from tasks.release.evaluate.schemas import ANSWERS, SPANS, SUBCAUSES
from tasks.release.evaluate.summary import summarize


def test_metrics_of_the_projected_rows_equal_those_of_the_full_rows(tmp_path, eval_config) -> None:
    run = write_run(tmp_path / "run", verified=False, editors=("classical", "other-editor"), cyclic=True)
    outcome = run_eval(run, eval_config, EvalRequest("rules:rules-v1", unverified=True))
    folder, m = outcome.folder, outcome.metrics
    answers = ArtifactReader(run, f"{folder}/answers", ANSWERS).rows()
    assert {r["question_set"] for r in answers} >= {"main", "beaf"} and any(r["rotation"] for r in answers)
    assert len({r["editor"] for r in answers}) == 2 and any(not r["correct"] for r in answers)
    full = summarize(answers)
    assert {k: m[k] for k in full} == full
    subcauses = ArtifactReader(run, f"{folder}/subcauses", SUBCAUSES).rows()
    assert subcauses and m["subcauses"] == subcause_distribution(
        [r for r in subcauses if (r.get("variant") or "targeted") != "control"]
    )
    assert m["spans"] == span_summary(ArtifactReader(run, f"{folder}/spans", SPANS).rows())

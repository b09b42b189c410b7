"""``reactbench report health`` and ``export --strict`` through the real CLI, on a small hand-made
run with two planted faults: a source image that is a near-copy of another item's, and a task
and type (counterfactual_attribute / YN) whose every gold answer is "No"."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import typer
from eval_helpers import _edit, _q, build_rows
from typer.testing import CliRunner

from flows.cli_eval import register
from storage.fs import RunFS
from storage.image_store import ImageStore
from storage.parquet_io import table_from_rows, write_table
from storage.schemas import ATTRIBUTE_STATS, EDITS, PAIR_STATS, QUESTIONS, VERIFIED_EDITS, VERIFIED_QUESTIONS


def _cli(*args: str):
    """The real ``report`` / ``export`` commands (``flows.cli_eval``), in process."""
    app = typer.Typer()

    @app.callback()
    def main() -> None:  # a group, like the real CLI
        pass

    register(app)
    return CliRunner().invoke(app, list(args))


def _planted_run(root: Path) -> RunFS:
    """build_rows' four items, plus two counterfactual-attribute items: one whose source image is
    the first CA item's image with a little noise (the planted near-duplicate), one unrelated.
    Every CA yes/no gold is "No" (the planted always-"No" type)."""
    run = RunFS.open(str(root))
    store = ImageStore(run)
    edits, questions = build_rows(store, cyclic=False)
    ca = next(e for e in edits if e["task"] == "counterfactual_attribute")
    pixels = store.get_array(ca["original_image"])
    rng = np.random.default_rng(7)
    near = np.clip(pixels.astype(int) + rng.integers(-3, 4, size=pixels.shape), 0, 255).astype(np.uint8)
    other = rng.integers(0, 255, size=pixels.shape, dtype=np.uint8)
    for eid, orig in (("e-ca-near", store.put_array(near)), ("e-ca-other", store.put_array(other))):
        edited = store.put_array(rng.integers(0, 255, size=pixels.shape, dtype=np.uint8))
        e = _edit(eid, "counterfactual_attribute", {"target_name": "banana", "attribute": "yellow"}, orig, edited)
        edits.append(e)
        questions.append(
            _q(e, "main", "Q1", "YN", "direct", f"Is the banana in picture {eid} yellow?", "No", [edited], "edited")
        )
        questions.append(
            _q(
                e,
                "main",
                "Q2",
                "YN",
                "commonsense",
                "Bananas are usually yellow. Is this one?",
                "No",
                [edited],
                "edited",
            )
        )
    write_table(run, "edit/edits/part-00000.parquet", table_from_rows(EDITS, edits))
    write_table(run, "qa/questions/part-00000.parquet", table_from_rows(QUESTIONS, questions))
    from tasks.review.export_set import write_export_set

    ve = [dict(x, decisions_json=json.dumps([{"action": "accept"}])) for x in edits]
    write_export_set(
        run,
        {
            "verified_edits": table_from_rows(VERIFIED_EDITS, ve),
            "verified_questions": table_from_rows(VERIFIED_QUESTIONS, questions),
        },
        0,
    )
    pair = {"source": "visual_genome", "a": "mustard", "b": "hot dog", "c_a": 9, "c_b": 10, "c_ab": 9}
    pair |= {"p_b_given_a": 1.0, "p_a_given_b": 0.9, "predicate": "on", "direction": "a_subject", "kept": True}
    write_table(run, "mine/pair_stats/part-00000.parquet", table_from_rows(PAIR_STATS, [pair]))
    attr = {
        "object": "banana",
        "attribute": "yellow",
        "c_o": 10,
        "c_oa": 9,
        "p_a_given_o": 0.9,
        "rank": 1,
        "kept": True,
    }
    write_table(run, "mine/attribute_stats/part-00000.parquet", table_from_rows(ATTRIBUTE_STATS, [attr]))
    run.write_text_atomic("config.yaml", "version: 1\n")
    return run


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("health")
    _planted_run(root / "run")
    return root


def test_report_finds_the_planted_faults(planted):
    proc = _cli("report", "health", "--run-dir", str(planted / "run"))
    assert proc.exit_code == 0, proc.output
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert len(lines) == 1  # one JSON line
    assert "health report ->" in proc.stderr
    head = json.loads(lines[0])
    assert head["trivial"]["counterfactual_attribute/YN"] == {"best": "always_no", "accuracy": 1.0}
    assert head["trivial"]["alteration_tracing/YN"]["accuracy"] == 1.0  # one question: a single gold is trivially hit
    assert head["duplicate_images"] > 0
    assert (planted / "run" / "reports" / "health.html").exists()
    figures = json.loads((planted / "run" / "reports" / "health.json").read_text())
    dup = figures["duplicates"]
    assert dup["image_pairs"] == 1 and dup["items_near_duplicate_image"] == 2
    assert sorted(dup["pairs"][0]["items"]) == ["e-ca", "e-ca-near"]  # the planted pair, not the unrelated image
    # the blind prior believes bananas are yellow: it answers "Yes" and is wrong on every CA yes/no question
    assert figures["blind_prior"]["per_task_type"]["counterfactual_attribute/YN"] == 0.0
    assert figures["balance"]["yes_ratio"]["counterfactual_attribute"] == 0.0


def test_strict_export_refuses_and_plain_export_warns(planted):
    out = planted / "release"
    proc = _cli("export", "--run-dir", str(planted / "run"), "--out", str(out), "--strict")
    assert proc.exit_code == 2, proc.output
    assert "trivial counterfactual_attribute/YN: always_no scores 1.0000" in proc.output
    assert "duplicate_image_share" in proc.output
    assert not out.exists()  # nothing half-written
    proc = _cli("export", "--run-dir", str(planted / "run"), "--out", str(out))
    assert proc.exit_code == 0, proc.output
    assert "warning: health: trivial counterfactual_attribute/YN" in proc.output
    card = (out / "README.md").read_text()
    assert "## Benchmark health" in card and "| counterfactual_attribute / YN | always_no | 100.0% |" in card


def test_prior_backend_evaluates_from_the_text_and_the_mined_statistics(planted):
    """``reactbench eval --model prior:blind-v1``: no image read, every answer from the question and mine/."""
    from storage.parquet_io import ArtifactReader

    proc = _cli("eval", "--run-dir", str(planted / "run"), "--model", "prior:blind-v1", "--modes", "standard")
    assert proc.exit_code == 0, proc.output
    folder = planted / "run" / "eval" / "prior-blind-v1"
    answers = ArtifactReader(RunFS.open(str(folder)), "answers", "eval_answers").rows()
    ca_yn = [a for a in answers if a["task"] == "counterfactual_attribute" and a["qtype"] == "YN"]
    assert ca_yn and all(a["parsed"] == "Yes" and not a["correct"] for a in ca_yn)  # bananas are yellow, it believes
    assert all(a["status"] == "ok" for a in answers if a["qtype"] != "SA")
    assert json.loads((folder / "metrics.json").read_text())["model"]["backend"] == "prior"

"""The eval stage end to end with the offline ``rules`` baseline (answers from the original annotations)."""

from __future__ import annotations

import json

import pytest
from eval_helpers import write_run

from storage.parquet_io import ArtifactReader
from tasks.release.evaluate.run import EvalRequest, run_eval
from tasks.release.evaluate.schemas import ANSWERS, SPANS, SUBCAUSES
from tasks.release.items import InputsMissing


def _answers(run, folder):
    return ArtifactReader(run, f"{folder}/answers", ANSWERS).rows()


def test_every_question_answered_in_both_modes(rules_run):
    run, out = rules_run
    rows = _answers(run, out.folder)
    questions = ArtifactReader(run, "review/verified_questions", "verified_questions").count()
    assert len(rows) == 2 * questions
    assert {r["mode"] for r in rows} == {"standard", "cot"}
    assert all(r["status"] == "ok" for r in rows), [r for r in rows if r["status"] != "ok"]
    assert not any(r["unverified"] for r in rows)
    assert out.folder == "eval/rules-rules-v1"


def test_rules_baseline_falls_for_the_prior(rules_run):
    run, out = rules_run
    rows = {(r["task"], r["qid"], r["mode"], r["rotation"], r["image_role"]): r for r in _answers(run, out.folder)}
    for mode in ("standard", "cot"):
        re_yn = rows[("relational_erasure", "Q1", mode, 0, "edited")]
        assert (re_yn["parsed"], re_yn["correct"], re_yn["prior_fallback"]) == ("Yes", False, True)
        re_sa = rows[("relational_erasure", "Q5", mode, 0, "edited")]
        assert not re_sa["correct"] and re_sa["prior_fallback"] and re_sa["judge"] == "rules"
        re_mc = rows[("relational_erasure", "Q9", mode, 0, "edited")]
        assert re_mc["parsed"] == "A" and re_mc["prior_fallback"]
        ca_sa = rows[("counterfactual_attribute", "Q5", mode, 0, "edited")]
        assert "yellow" in ca_sa["parsed"] and ca_sa["prior_fallback"]
        # dense counting is answered from the points: right
        for qid in ("Q1", "Q5", "Q6", "Q7"):
            assert rows[("dense_counting", qid, mode, 0, "original")]["correct"], qid
        assert not rows[("alteration_tracing", "Q1", mode, 0, "pair")]["correct"]
        assert rows[("alteration_tracing", "Q1", mode, 0, "pair")]["prior_fallback"] is None


def test_metrics_file(rules_run):
    run, out = rules_run
    m = json.loads(run.read_text(out.folder, "metrics.json"))
    assert m == out.metrics
    assert m["react"]["per_task"]["dense_counting"] == 100.0
    assert m["react"]["per_task"]["relational_erasure"] == 0.0
    assert m["react"]["complete"]
    beaf = m["beaf"]["standard"]
    # removed object: right on the original, "still there" on the edit -> stubborn Yes
    assert (beaf["TU"], beaf["SB_p"], beaf["ID"], beaf["F1"]) == (0.0, 100.0, 0.0, 0.0)
    re_rate = next(h for h in m["hallu_rate"]["task"] if h["task"] == "relational_erasure" and h["mode"] == "cot")
    assert re_rate["hallu_rate"] == 100.0
    assert m["unverified"] is False and "verified" in m["questions_source"]


def test_subcauses_and_spans(rules_run):
    run, out = rules_run
    sub = ArtifactReader(run, f"{out.folder}/subcauses", SUBCAUSES).rows()
    assert sub and all(s["status"] == "ok" for s in sub)
    labels = {(s["task"], s["label"]) for s in sub}
    assert ("relational_erasure", "SC-3") in labels and ("counterfactual_attribute", "SC-1") in labels
    spans = ArtifactReader(run, f"{out.folder}/spans", SPANS).rows()
    re_spans = [s for s in spans if s["task"] == "relational_erasure"]
    assert re_spans and all(s["status"] == "ok" for s in re_spans)
    assert any(t == "Object" for s in re_spans for _, _, t in json.loads(s["spans_json"]))
    assert out.metrics["subcauses"]["relational_erasure"]["n"] == len(
        [s for s in sub if s["task"] == "relational_erasure"]
    )


def test_rerun_skips_and_is_byte_identical(tmp_path, eval_config):
    run = write_run(tmp_path / "r", verified=False)
    first = run_eval(run, eval_config, EvalRequest("rules:rules-v1", unverified=True))
    files = {
        p: run.fs.cat_file(p)
        for p in run.walk_files(first.folder)
        if p.endswith(".parquet") or p.endswith("metrics.json")
    }
    again = run_eval(run, eval_config, EvalRequest("rules:rules-v1", unverified=True))
    assert again.stage.all_skipped
    forced = run_eval(run, eval_config, EvalRequest("rules:rules-v1", unverified=True, force=True, no_cache=True))
    assert forced.stage.shards_run == forced.stage.shards_total
    assert {p: run.fs.cat_file(p) for p in files} == files
    assert first.folder.endswith("-unverified")
    assert all(r["unverified"] for r in _answers(run, first.folder))


def test_missing_inputs_are_a_clear_error(tmp_path, eval_config):
    run = write_run(tmp_path / "r", verified=False)
    with pytest.raises(InputsMissing, match="verified_questions.*--unverified"):
        run_eval(run, eval_config, EvalRequest("rules:rules-v1"))
    with pytest.raises(ValueError, match="BACKEND:MODEL"):
        run_eval(run, eval_config, EvalRequest("rules-v1", unverified=True))


def test_missing_image_is_a_reject(tmp_path, eval_config):
    run = write_run(tmp_path / "r", verified=False)
    victim = ArtifactReader(run, "qa/questions", "questions").rows()[0]["images"][0]
    run.rm(victim)
    out = run_eval(run, eval_config, EvalRequest("rules:rules-v1", unverified=True))
    rej = ArtifactReader(run, f"{out.folder}/rejects", "rejects").rows()
    assert rej and {r["reason"] for r in rej} == {"image_missing"}
    answered = {r["question_id"] for r in _answers(run, out.folder)}
    assert not answered & {r["id"] for r in rej}


def test_prior_options_cover_premise_questions():
    from tasks.release.evaluate.score import matched_prior_options as _prior_options

    premise = {
        "text": "The colour of the mustard on the bun is:",
        "gold": "A",
        "options": ["No such object", "Yellow", "Brown", "Red"],
    }
    assert _prior_options(premise, ["mustard"]) == {"B", "C", "D"}
    direct = {
        "text": "What is on the bun?",
        "gold": "B",
        "options": ["A mustard line", "A bare bun", "A bicycle", "No mustard at all"],
    }
    assert _prior_options(direct, ["mustard"]) == {"A"}
    assert _prior_options({"text": "What is on the bun?", "gold": "A", "options": ["x", "y"]}, ["mustard"]) == set()


def test_subcauses_once_per_question_with_pictures_and_item_facts(tmp_path, eval_config):
    from prompts.clients.rules import RulesClient
    from tasks.engine.prompt_hooks import rules_table
    from tasks.release.evaluate.stage import EvalClients

    class RecordingJudge(RulesClient):
        """The rules judge, keeping what each sub-cause request carried."""

        def __init__(self):
            super().__init__(rules=rules_table())
            self.seen = []

        def complete(self, requests):
            self.seen += [r for r in requests if r.prompt_name.startswith("eval_subcause")]
            return super().complete(requests)

    run = write_run(tmp_path / "r", verified=False)
    judge = RecordingJudge()
    out = run_eval(
        run,
        eval_config,
        EvalRequest("rules:rules-v1", unverified=True),
        clients=EvalClients(RulesClient(rules=rules_table()), judge),
    )
    sub = ArtifactReader(run, f"{out.folder}/subcauses", SUBCAUSES).rows()
    answers = {a["id"]: a for a in _answers(run, out.folder)}
    keys = [
        (answers[s["answer_id"]]["edit_id"], answers[s["answer_id"]]["qid"], answers[s["answer_id"]]["mode"])
        for s in sub
    ]
    assert len(keys) == len(set(keys))  # the four rotations of RE Q12 are attributed once
    wrong_q12 = [a for a in answers.values() if a["qid"] == "Q12" and a["mode"] == "cot" and not a["correct"]]
    assert len(wrong_q12) > 1 and sum(1 for k in keys if k[1] == "Q12") == 1
    assert {s["variant"] for s in sub} == {"targeted"} and {s["mode"] for s in sub} == {"cot"}
    for req in judge.seen:
        images = [p for p in req.messages[0]["content"] if p["type"] == "image"]
        assert len(images) == (2 if req.prompt_name == "eval_subcause_pair" else 1)
    assert {r.prompt_name for r in judge.seen} == {"eval_subcause", "eval_subcause_pair"}
    # a YN question of RE gets the item's location and what remains from the item's SA rubric
    re_yn = next(
        r for r in judge.seen if r.context["task"] == "relational_erasure" and "Can you see" in r.context["question"]
    )
    facts = dict(re_yn.context["facts"])
    assert (
        facts["removed_object"] == "mustard"
        and facts["location"] == "top of the bun"
        and facts["remaining_at_location"] == "a bare bun surface"
    )

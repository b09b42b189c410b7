"""Model-based extraction (``eval.extract_with_judge``): the judge reads the Yes/No or letter of
replies the rules cannot read; off by default; its reading is taken only when it is exactly one
allowed answer; each answer records who read it and ``metrics.json`` counts them."""

from __future__ import annotations

from typing import Any

from eval_helpers import ScriptedReplies, write_run

from prompts.clients.base import MLLMResponse
from prompts.clients.rules import RulesClient
from prompts.eval_parsing import extract_choice, extract_yes_no
from storage.parquet_io import ArtifactReader
from tasks.engine.prompt_hooks import rules_table
from tasks.release.evaluate.run import EvalRequest, run_eval
from tasks.release.evaluate.stage import EvalClients

# Replies the rules cannot read, and what the scripted judge says each one commits to.
READINGS = {
    "My reading: affirmative.": "Yes",
    "My reading: negative.": "No",
    "My reading: the first one.": "(A)",
    "My reading: the second one.": "B",
    "My reading: I cannot settle on one.": "none",
    "My reading: one of the middle ones.": "B or C",  # not one answer: left unread
}


def _reply(q: dict[str, Any]) -> str:
    if q["qtype"] == "YN":
        return "My reading: affirmative." if q["gold"] == "Yes" else "My reading: negative."
    if q["qtype"] == "MC":
        return {
            "A": "My reading: the first one.",
            "B": "My reading: the second one.",
            "C": "My reading: I cannot settle on one.",
        }.get(q["gold"], "My reading: one of the middle ones.")
    return str(q["gold"])


class ReadingJudge(RulesClient):
    """The rules judge, except that it reads ``eval_extract`` requests from :data:`READINGS`."""

    backend = "scripted-judge"

    def __init__(self) -> None:
        super().__init__("reader-v1", rules=rules_table())
        self.asked: list[str] = []

    def complete(self, requests):
        out = []
        for req in requests:
            if req.prompt_name == "eval_extract":
                self.asked.append(req.context["reply"])
                out.append(MLLMResponse(f"answer: {READINGS[req.context['reply']]}", self.model_id, self.backend))
            else:
                out.extend(super().complete([req]))
        return out


def _evaluate(root, extract: bool):
    from flows.config import BuildConfig

    run = write_run(root)
    questions = ArtifactReader(run, "review/verified_questions", "verified_questions").rows()
    images = {p: run.read_bytes(p) for q in questions for p in q["images"]}
    eval_cfg = {
        "modes": ["standard"],
        "subcauses": False,
        "spans": False,
        **({"extract_with_judge": True} if extract else {}),
    }
    config = BuildConfig.model_validate({"run": {"shard_size": 64, "workers": 1}, "eval": eval_cfg})
    judge = ReadingJudge()
    outcome = run_eval(
        run,
        config,
        EvalRequest("scripted:reader"),
        clients=EvalClients(ScriptedReplies("reader", questions, images, _reply), judge),
    )
    answers = ArtifactReader(run, f"{outcome.folder}/answers", "eval_answers").rows()
    return answers, outcome.metrics, judge


def test_the_rules_cannot_read_these_replies():
    for reply in READINGS:
        assert extract_yes_no(reply) is None and extract_choice(reply, ["a red cup", "a blue cup", "a cat"]) is None


def test_off_by_default_the_judge_is_not_asked(tmp_path):
    answers, metrics, judge = _evaluate(tmp_path / "run", extract=False)
    read = [a for a in answers if a["qtype"] in ("YN", "MC")]
    assert read and judge.asked == []
    assert all(a["status"] == "unparseable" and a["parsed_by"] is None and not a["correct"] for a in read)
    assert metrics["extraction"] == {"rules": 0, "judge": 0, "unread": len(read)}


def test_the_judge_reads_what_the_rules_cannot(tmp_path):
    answers, metrics, judge = _evaluate(tmp_path / "run", extract=True)
    read = [a for a in answers if a["qtype"] in ("YN", "MC")]
    assert sorted(judge.asked) == sorted(a["raw_response"] for a in read)  # every unparseable reply, nothing else
    by_judge = [a for a in read if a["parsed_by"] == "judge"]
    unread = [a for a in read if a["status"] == "unparseable"]
    assert by_judge and all(
        a["status"] == "ok" and a["parsed"] == READINGS[a["raw_response"]].strip("()") and a["correct"]
        for a in by_judge
    )
    assert unread and all(
        READINGS[a["raw_response"]] in ("none", "B or C") and a["parsed_by"] is None and not a["correct"]
        for a in unread
    )
    assert len(by_judge) + len(unread) == len(read)
    assert metrics["extraction"] == {"rules": 0, "judge": len(by_judge), "unread": len(unread)}
    sa = [a for a in answers if a["qtype"] == "SA"]
    assert sa and all(a["parsed_by"] == "rules" for a in sa)  # short answers: the rules' segment, judged as before


def test_the_rules_judge_reads_no_more_than_the_rules(tmp_path):
    """With the offline judge configured, extraction asks the rules parser again: nothing new is read."""
    from flows.config import BuildConfig

    run = write_run(tmp_path / "run")
    questions = ArtifactReader(run, "review/verified_questions", "verified_questions").rows()
    images = {p: run.read_bytes(p) for q in questions for p in q["images"]}
    config = BuildConfig.model_validate(
        {
            "run": {"shard_size": 64, "workers": 1},
            "eval": {"modes": ["standard"], "subcauses": False, "spans": False, "extract_with_judge": True},
        }
    )
    outcome = run_eval(
        run,
        config,
        EvalRequest("scripted:reader"),
        clients=EvalClients(ScriptedReplies("reader", questions, images, _reply), RulesClient(rules=rules_table())),
    )
    answers = ArtifactReader(run, f"{outcome.folder}/answers", "eval_answers").rows()
    read = [a for a in answers if a["qtype"] in ("YN", "MC")]
    assert read and all(a["status"] == "unparseable" and a["parsed_by"] is None for a in read)
    assert outcome.metrics["extraction"]["judge"] == 0

"""Judging short answers: the configured judge (an LLM, or the rules backend's offline judge),
the offline judge as the fallback when an LLM verdict fails, and optionally the embedding
judge for paraphrases the rules miss (``tasks.release.evaluate.embed_judge``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prompts.clients.base import MLLMClient
from prompts.eval_prompts import SA_JUDGE
from prompts.offline_judge import offline_judge
from prompts.runner import PromptInput, run_prompt
from tasks.engine.prompt_hooks import judge_rule
from tasks.engine.taxonomy import task_text
from tasks.release.items import probes_prior, rubric

if TYPE_CHECKING:
    from tasks.release.evaluate.embed_judge import Encoder


def judge_context(a: dict[str, Any], q: dict[str, Any], ann: dict[str, Any]) -> dict[str, Any]:
    """What the judge prompt (and the offline judge) is given for one short answer."""
    return {
        "task": a["task"],
        "task_note": task_text(a["task"]).get("note", ""),
        "question": a["text"],
        "gold": a["gold"],
        "answer": a["parsed"] or a["raw_response"] or "",
        "rubric": [[k, str(v)] for k, v in sorted(rubric(q).items())],
        "prior_terms": list(ann.get("prior_terms") or []) if a["question_set"] == "main" else [],
    }


def judge_short_answers(
    judge: MLLMClient,
    answers: list[dict[str, Any]],
    questions: dict[str, dict[str, Any]],
    annotations: dict[str, dict[str, Any]],
    encoder: Encoder | None = None,
    embed_threshold: float = 0.8,
) -> None:
    """Set ``correct``, ``judge*`` and ``prior_fallback`` on every SA answer row, in place."""
    todo = [a for a in answers if a["qtype"] == "SA" and a["status"] != "error"]
    if not todo:
        return
    inputs = [
        PromptInput(judge_context(a, questions[a["question_id"]], annotations.get(a["edit_id"], {}))) for a in todo
    ]
    outcomes = run_prompt(judge, SA_JUDGE, inputs, temperature=0.0, max_tokens=256)
    for a, inp, out in zip(todo, inputs, outcomes):
        ctx = inp.context
        if out.status == "ok" and out.fields:
            verdict, how = out.fields, ("rules" if out.backend == "rules" else "llm")
        else:
            try:
                verdict = offline_judge(
                    ctx["gold"], ctx["answer"], dict(ctx["rubric"]), ctx["prior_terms"], judge_rule(ctx["task"])
                )
                how = "rules_fallback"
            except ValueError as exc:  # a malformed rubric: recorded, scored as not correct
                verdict, how = (
                    {"verdict": "hallucination", "fallback": False, "reason": f"cannot judge: {exc}"},
                    "failed",
                )
        a["correct"] = verdict["verdict"] == "correct"
        if how != "llm" and not a["correct"] and not verdict.get("fallback") and encoder is not None:
            from tasks.release.evaluate.embed_judge import accept_paraphrase

            refs = [ctx["gold"]] + [v for k, v in ctx["rubric"] if k in ("new_attribute", "remaining_at_location")]
            ok, sim = accept_paraphrase(encoder, ctx["answer"], refs, ctx["prior_terms"], embed_threshold)
            if ok:
                a["correct"] = True
                verdict = {**verdict, "verdict": "correct", "reason": f"paraphrase of the reference (cosine {sim})"}
            how += "+embedding"
        a["judge"] = how
        a["judge_model"] = f"{out.backend}:{out.model_id}"
        a["judge_reason"] = verdict.get("reason")
        a["judge_raw"] = out.raw
        if probes_prior(a["task"]) and a["question_set"] == "main" and ctx["prior_terms"]:
            a["prior_fallback"] = bool(verdict.get("fallback")) and not a["correct"]

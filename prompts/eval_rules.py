"""The ``rules`` backend's answers to the evaluation prompts (offline, from annotations only).

- answering: a no-vision baseline that answers from the *original* annotations, so it falls
  for the prior on purpose (it "sees" the erased object and the original attribute, and no
  change between before and after) and gets dense counting right from the points;
- the judge: :func:`prompts.offline_judge.offline_judge`; reading a reply for the judge
  (``eval_extract``): the rules parser again;
- sub-causes and spans: keyword heuristics over the reasoning text.

What differs per task is one :class:`EvalRules` object, the task's ``eval_rules`` hook (the
built-in tasks' in ``tasks/builtin_tasks/<id>/evaluation.py``; :data:`PRIOR_RULES` without
one); the judge's rule is its ``sa_judge`` hook. This module looks no task up (issue 41): the task
room resolves both hooks (``tasks/engine/prompt_hooks.py``) and hands them down in an
:class:`EvalAnswers`, whose :meth:`EvalAnswers.table` ``prompts.rules.rules_table`` lists.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from prompts.eval_parsing import (
    extract_choice,
    extract_yes_no,
    mentions,
    negated_mention,
    render_tagged,
    spans_from_phrases,
)
from prompts.eval_prompts import ANSWER_SPECS, EXTRACT, SA_JUDGE, SPAN_DETECT, SUBCAUSE, SUBCAUSE_PAIR
from prompts.offline_judge import OVERLAP, is_denial, offline_judge
from prompts.rules_api import RulesFn


def annotations_of(ctx: dict[str, Any]) -> dict[str, Any]:
    """The item's gathered annotations in an evaluation prompt's context."""
    return ctx.get("annotations") or {}


def prior_hit(text: str, ann: dict[str, Any]) -> bool:
    """Whether ``text`` states one of the item's prior terms (not negated)."""
    return any(mentions(text, t) and not negated_mention(text, t) for t in ann.get("prior_terms") or [] if t)


class EvalRules:
    """The rules backend's offline behaviour for one kind of task, chosen by the task's
    ``eval_rules`` hook (an instance of this class or a subclass). This base is what a task
    without the hook gets: it answers from the prior (the original scene), classifies every
    sub-cause as "other" and tags the prior terms as objects."""

    def answer(self, ctx: dict[str, Any]) -> str | None:
        """The task's own answer to a main-set question, or None for the prior baseline."""
        return None

    def reasoning(self, ctx: dict[str, Any]) -> str:
        """The CoT reasoning before the answer."""
        return "Reasoning from what is typical."

    def subcause(self, response: str, facts: dict[str, Any]) -> str:
        """A sub-cause code (SC-1 ...) for a wrong CoT answer's reasoning, or "other"."""
        return "other"

    def span_type(self, facts: dict[str, Any]) -> str:
        """The MHALO span type of the task's hallucinations."""
        return "Object"

    def span_phrases(self, response: str, facts: dict[str, Any]) -> list[str]:
        """Phrases of a response to tag besides the prior terms."""
        return []


def _prior_answer(ctx: dict[str, Any]) -> str:
    """What an annotation-only reader says from the prior: it accepts the original scene."""
    ann, qtype, q = annotations_of(ctx), ctx.get("qtype"), str(ctx.get("question", ""))
    if qtype == "YN":
        return "Yes" if prior_hit(q, ann) else "No"
    if qtype == "MC":
        opts = list(ctx.get("options_list") or [])
        pick = next((i for i, o in enumerate(opts) if prior_hit(o, ann)), None)
        if pick is None and prior_hit(q, ann):  # a premise question: accept the premise
            pick = next((i for i, o in enumerate(opts) if not is_denial(o)), None)
        return option_letter(opts, pick)
    if ann.get("target_name"):
        return f"I can see {ann['target_name']} there."
    return "I cannot tell."


def option_letter(opts: list[str], pick: int | None) -> str:
    """The letter of option ``pick`` (``A`` when none is picked)."""
    letters = [chr(65 + i) for i in range(len(opts))]
    return letters[pick if pick is not None else 0] if letters else "A"


# What a task without an ``eval_rules`` hook gets (the built-ins' hooks are in their packages).
PRIOR_RULES = EvalRules()


def _extract_rules(ctx: dict[str, Any]) -> dict[str, Any]:
    """The rules read the reply again: an offline judge reads no more than the rules did."""
    if ctx["qtype"] == "YN":
        found = extract_yes_no(ctx["reply"], bool(ctx.get("cot")))
    else:
        found = extract_choice(ctx["reply"], [text for _, text in ctx.get("options") or []], bool(ctx.get("cot")))
    return {"answer": found or "none"}


@dataclass(frozen=True)
class EvalAnswers:
    """The rules backend's answers to the evaluation prompts, given what each task says about
    them: ``rules`` (task id -> its ``eval_rules`` hook, an :class:`EvalRules`) and ``judges``
    (task id -> its ``sa_judge`` hook, one of :data:`prompts.offline_judge.RULES`), loaded by the
    task room. A task absent from them gets :data:`PRIOR_RULES` and ``OVERLAP``."""

    rules: Mapping[str, EvalRules] = field(default_factory=dict)
    judges: Mapping[str, str] = field(default_factory=dict)

    def rules_for(self, task: object) -> EvalRules:
        """The task's ``eval_rules``; :data:`PRIOR_RULES` for a task without one (or unknown)."""
        return self.rules.get(str(task), PRIOR_RULES)

    def judge_rule(self, task: object) -> str:
        """The offline judge's rule for the task's short answers; ``OVERLAP`` for a task without one."""
        return self.judges.get(str(task), OVERLAP)

    def baseline_answer(self, ctx: dict[str, Any]) -> str:
        """What an annotation-only reader says: the original scene, unchanged."""
        ann, q = annotations_of(ctx), str(ctx.get("question", ""))
        if ctx.get("qtype") == "YN" and ctx.get("question_set") == "beaf":
            return "Yes" if any(mentions(q, o) for o in ann.get("objects") or [] if o) else "No"
        own = self.rules_for(ctx.get("task")).answer(ctx)
        return own if own is not None else _prior_answer(ctx)

    def classify_subcause(self, task: object, response: str, facts: dict[str, Any] | None = None) -> str:
        """A keyword heuristic for the rules backend (the LLM prompt is the real classifier)."""
        t = (response or "").lower()
        if not t.strip():
            return "other"
        return self.rules_for(task).subcause(t, facts or {})

    def _answer(self, ctx: dict[str, Any]) -> dict[str, Any]:
        final = self.baseline_answer(ctx)
        if ctx.get("cot"):
            return {"reasoning": self.rules_for(ctx.get("task")).reasoning(ctx), "answer": final}
        return {"answer": final}

    def _judge(self, ctx: dict[str, Any]) -> dict[str, Any]:
        return offline_judge(
            ctx["gold"],
            ctx["answer"],
            dict(ctx.get("rubric") or []),
            list(ctx.get("prior_terms") or []),
            self.judge_rule(ctx["task"]),
        )

    def _subcause(self, ctx: dict[str, Any]) -> dict[str, Any]:
        label = self.classify_subcause(ctx["task"], ctx["response"], dict(ctx.get("facts") or []))
        return {"label": label, "rationale": "keyword heuristic of the offline rules backend"}

    def _span(self, ctx: dict[str, Any]) -> dict[str, Any]:
        response = str(ctx["response"])
        facts = dict(ctx.get("facts") or [])
        rules = self.rules_for(ctx["task"])
        typ = rules.span_type(facts)
        phrases = [(t, typ) for t in ctx.get("prior_terms") or [] if t]
        phrases += [(p, typ) for p in rules.span_phrases(response, facts)]
        spans = spans_from_phrases(response, phrases)
        return {"tagged_text": render_tagged(response, spans)}

    def table(self) -> dict[str, RulesFn]:
        """Prompt name -> rules answer, for every evaluation prompt (:data:`EVAL_PROMPTS`)."""
        return {
            **{name: self._answer for name in ANSWER_SPECS},
            SA_JUDGE.name: self._judge,
            EXTRACT.name: _extract_rules,
            SUBCAUSE.name: self._subcause,
            SUBCAUSE_PAIR.name: self._subcause,
            SPAN_DETECT.name: self._span,
        }


# The evaluation prompts the rules backend answers (:meth:`EvalAnswers.table`'s keys, known without the tasks).
EVAL_PROMPTS: tuple[str, ...] = tuple(EvalAnswers().table())

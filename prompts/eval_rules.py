"""The ``rules`` backend's answers to the evaluation prompts (offline, from annotations only).

- answering: a no-vision baseline that answers from the *original* annotations, so it falls
  for the prior on purpose (it "sees" the erased object and the original attribute, and no
  change between before and after) and gets dense counting right from the points;
- the judge: :func:`prompts.offline_judge.offline_judge`; reading a reply for the judge
  (``eval_extract``): the rules parser again;
- sub-causes and spans: keyword heuristics over the reasoning text.

What differs per task is one :class:`EvalRules` object, the task's ``eval_rules`` hook
(:data:`ERASURE_RULES`, :data:`ATTRIBUTE_RULES`, :data:`CHANGE_RULES`, :data:`COUNT_RULES` for
the built-in tasks); the judge's rule is its ``sa_judge`` hook.

Nothing registers itself on import: :data:`RULES` is listed by ``prompts.rules.builtin_rules``.
"""

from __future__ import annotations

import re
from typing import Any

from prompts.eval_parsing import extract_choice, extract_yes_no, mentions, negated_mention, render_tagged, spans_from_phrases
from prompts.eval_prompts import ANSWER_SPECS, EXTRACT, SA_JUDGE, SPAN_DETECT, SUBCAUSE, SUBCAUSE_PAIR
from prompts.offline_judge import OVERLAP, is_denial, offline_judge
from prompts.rules_api import RulesFn
from storage.task_spec import task_hook


def _ann(ctx: dict[str, Any]) -> dict[str, Any]:
    return ctx.get("annotations") or {}


def _prior_hit(text: str, ann: dict[str, Any]) -> bool:
    return any(mentions(text, t) and not negated_mention(text, t) for t in ann.get("prior_terms") or [] if t)


_ACTIVITY = re.compile(r"\b\w+ing\b")
_SCENE = re.compile(r"\b(scene|setting|place|kitchen|street|room|beach|park|usually|typically|commonly|often)\b", re.I)
_SAME = re.compile(r"\b(identical|same|unchanged|no change|nothing changed|not changed|no object was|nothing was)\b", re.I)


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
    ann, qtype, q = _ann(ctx), ctx.get("qtype"), str(ctx.get("question", ""))
    if qtype == "YN":
        return "Yes" if _prior_hit(q, ann) else "No"
    if qtype == "MC":
        opts = list(ctx.get("options_list") or [])
        pick = next((i for i, o in enumerate(opts) if _prior_hit(o, ann)), None)
        if pick is None and _prior_hit(q, ann):  # a premise question: accept the premise
            pick = next((i for i, o in enumerate(opts) if not is_denial(o)), None)
        return _letter(opts, pick)
    if ann.get("target_name"):
        return f"I can see {ann['target_name']} there."
    return "I cannot tell."


def _letter(opts: list[str], pick: int | None) -> str:
    letters = [chr(65 + i) for i in range(len(opts))]
    return letters[pick if pick is not None else 0] if letters else "A"


class ErasureRules(EvalRules):
    """Something that usually appears with its partner was erased: the prior says it is there."""

    def reasoning(self, ctx: dict[str, Any]) -> str:
        return f"The scene is the kind of place where {_ann(ctx).get('target_name') or 'this object'} is usually found, so it should be there."

    def subcause(self, response: str, facts: dict[str, Any]) -> str:
        if _SCENE.search(response):
            return "SC-3"
        if any(w not in ("nothing", "something", "thing", "looking", "morning", "during") for w in _ACTIVITY.findall(response)):
            return "SC-2"
        return "SC-1"


class AttributeRules(EvalRules):
    """An object's typical attribute was changed: the prior says the usual one."""

    def answer(self, ctx: dict[str, Any]) -> str | None:
        ann = _ann(ctx)
        if ctx.get("qtype") not in ("YN", "MC") and ann.get("original_attribute"):
            return f"It is {ann['original_attribute']}."
        return None

    def reasoning(self, ctx: dict[str, Any]) -> str:
        return f"Objects like this are typically {_ann(ctx).get('original_attribute') or 'as usual'}, so that is what I expect here."

    def subcause(self, response: str, facts: dict[str, Any]) -> str:
        new = str(facts.get("new_attribute") or "")
        if new and mentions(response, new) and re.search(r"\b(but|however|actually|though)\b", response):
            return "SC-3"
        if re.search(r"\b(typically|usually|commonly|normally|known|expect)\b", response):
            return "SC-1"
        return "SC-2"

    def span_type(self, facts: dict[str, Any]) -> str:
        kind = str(facts.get("attribute_type", "")).lower()
        return "Color Attribute" if "colo" in kind else "Shape Attribute" if "shape" in kind else "Knowledge Error"


class ChangeRules(EvalRules):
    """One small edit separates two pictures: the baseline sees no change."""

    def answer(self, ctx: dict[str, Any]) -> str | None:
        qtype, q = ctx.get("qtype"), str(ctx.get("question", ""))
        if qtype == "YN":
            return "Yes" if _SAME.search(q) else "No"
        if qtype == "MC":
            opts = list(ctx.get("options_list") or [])
            return _letter(opts, next((i for i, o in enumerate(opts) if re.search(r"\b(nothing|no object|unchanged|no change)\b", o, re.I)), None))
        return "Nothing changed between the two pictures."

    def reasoning(self, ctx: dict[str, Any]) -> str:
        return "Both pictures show the same objects in the same places; they look identical."

    def subcause(self, response: str, facts: dict[str, Any]) -> str:
        if re.search(r"\b(identical|same|no difference|no change)\b", response):
            return "SC-1"
        if re.search(r"\b(changed|moved|removed|added|replaced|different)\b", response):
            return "SC-3"
        return "SC-2"

    def span_type(self, facts: dict[str, Any]) -> str:
        return "Spatial Relation"

    def span_phrases(self, response: str, facts: dict[str, Any]) -> list[str]:
        return ["identical", "the same", "no change"]


class CountRules(EvalRules):
    """Many similar objects with a known count: the baseline counts right from the points."""

    def answer(self, ctx: dict[str, Any]) -> str | None:
        ann, qtype, q = _ann(ctx), ctx.get("qtype"), str(ctx.get("question", ""))
        count = ann.get("count")
        if count is None:
            return None
        if qtype == "YN":
            nums = [int(n) for n in re.findall(r"\d+", q)]
            if len(nums) >= 2:
                return "Yes" if nums[0] <= count <= nums[1] else "No"
            return "Yes" if nums and nums[0] == count else "No"
        if qtype == "MC":
            opts = list(ctx.get("options_list") or [])
            pick = None
            for i, o in enumerate(opts):
                nums = [int(n) for n in re.findall(r"\d+", o)]
                if (len(nums) == 1 and nums[0] == count) or (len(nums) >= 2 and nums[0] <= count <= nums[1]):
                    pick = i
                    break
            return _letter(opts, pick)
        if re.search(r"\brange\b", q, re.I):
            return f"{max(0, count - 2)}-{count + 2}"
        return str(count)

    def reasoning(self, ctx: dict[str, Any]) -> str:
        return f"Counting the instances one by one I reach {_ann(ctx).get('count')}."

    def subcause(self, response: str, facts: dict[str, Any]) -> str:
        if re.search(r"\b(rows?|columns?|grid|pattern|arranged|per row)\b", response):
            return "SC-2"
        if re.search(r"\bone by one\b|\b\d+\s*,\s*\d+\s*,\s*\d+", response):
            return "SC-3"
        return "SC-1"

    def span_type(self, facts: dict[str, Any]) -> str:
        return "Numerical Attribute"

    def span_phrases(self, response: str, facts: dict[str, Any]) -> list[str]:
        if facts.get("count") is None:
            return []
        return sorted({n for n in re.findall(r"\b\d+\b", response) if n != str(facts["count"])})


# The ``eval_rules`` hooks of the built-in tasks (tasks/builtin_tasks/<id>.py name them).
PRIOR_RULES = EvalRules()
ERASURE_RULES = ErasureRules()
ATTRIBUTE_RULES = AttributeRules()
CHANGE_RULES = ChangeRules()
COUNT_RULES = CountRules()


def rules_for(task: Any) -> EvalRules:
    """The task's ``eval_rules`` hook; :data:`PRIOR_RULES` for a task without one (or unknown)."""
    return task_hook(str(task), "eval_rules", PRIOR_RULES)


def judge_rule(task: Any) -> str:
    """The offline judge's rule for the task's short answers (its ``sa_judge`` hook, one of
    :data:`prompts.offline_judge.RULES`); ``OVERLAP`` for a task without one."""
    return task_hook(str(task), "sa_judge", OVERLAP)


def baseline_answer(ctx: dict[str, Any]) -> str:
    """What an annotation-only reader says: the original scene, unchanged."""
    ann, q = _ann(ctx), str(ctx.get("question", ""))
    if ctx.get("qtype") == "YN" and ctx.get("question_set") == "beaf":
        return "Yes" if any(mentions(q, o) for o in ann.get("objects") or [] if o) else "No"
    own = rules_for(ctx.get("task")).answer(ctx)
    return own if own is not None else _prior_answer(ctx)


def _answer_rules(ctx: dict[str, Any]) -> dict[str, Any]:
    final = baseline_answer(ctx)
    if ctx.get("cot"):
        return {"reasoning": rules_for(ctx.get("task")).reasoning(ctx), "answer": final}
    return {"answer": final}


def _judge_rules(ctx: dict[str, Any]) -> dict[str, Any]:
    return offline_judge(ctx["gold"], ctx["answer"], dict(ctx.get("rubric") or []), list(ctx.get("prior_terms") or []), judge_rule(ctx["task"]))


def _extract_rules(ctx: dict[str, Any]) -> dict[str, Any]:
    """The rules read the reply again: an offline judge reads no more than the rules did."""
    if ctx["qtype"] == "YN":
        found = extract_yes_no(ctx["reply"], bool(ctx.get("cot")))
    else:
        found = extract_choice(ctx["reply"], [text for _, text in ctx.get("options") or []], bool(ctx.get("cot")))
    return {"answer": found or "none"}


def classify_subcause(task: str, response: str, facts: dict[str, Any] | None = None) -> str:
    """A keyword heuristic for the rules backend (the LLM prompt is the real classifier)."""
    t = (response or "").lower()
    if not t.strip():
        return "other"
    return rules_for(task).subcause(t, facts or {})


def _subcause_rules(ctx: dict[str, Any]) -> dict[str, Any]:
    label = classify_subcause(ctx["task"], ctx["response"], dict(ctx.get("facts") or []))
    return {"label": label, "rationale": "keyword heuristic of the offline rules backend"}


def span_type_for(task: str, facts: dict[str, Any]) -> str:
    return rules_for(task).span_type(facts)


def _span_rules(ctx: dict[str, Any]) -> dict[str, Any]:
    response, task = str(ctx["response"]), ctx["task"]
    facts = dict(ctx.get("facts") or [])
    rules = rules_for(task)
    typ = rules.span_type(facts)
    phrases = [(t, typ) for t in ctx.get("prior_terms") or [] if t]
    phrases += [(p, typ) for p in rules.span_phrases(response, facts)]
    spans = spans_from_phrases(response, phrases)
    return {"tagged_text": render_tagged(response, spans)}


# Prompt name -> rules answer, for every evaluation prompt.
RULES: dict[str, RulesFn] = {
    **{name: _answer_rules for name in ANSWER_SPECS},
    SA_JUDGE.name: _judge_rules,
    EXTRACT.name: _extract_rules,
    SUBCAUSE.name: _subcause_rules,
    SUBCAUSE_PAIR.name: _subcause_rules,
    SPAN_DETECT.name: _span_rules,
}

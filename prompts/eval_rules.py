"""The ``rules`` backend's answers to the evaluation prompts (offline, from annotations only).

- answering: a no-vision baseline that answers from the *original* annotations, so it falls
  for the prior on purpose (it "sees" the erased object and the original attribute, and no
  change between before and after) and gets dense counting right from the points;
- the judge: :func:`prompts.offline_judge.offline_judge`;
- sub-causes and spans: keyword heuristics over the reasoning text.

Nothing registers itself on import: :data:`RULES` is listed by ``prompts.rules.builtin_rules``.
"""

from __future__ import annotations

import re
from typing import Any

from prompts.eval_parsing import mentions, negated_mention, render_tagged, spans_from_phrases
from prompts.eval_prompts import ANSWER_SPECS, SA_JUDGE, SPAN_DETECT, SUBCAUSE, SUBCAUSE_PAIR
from prompts.offline_judge import is_denial, offline_judge
from prompts.rules_api import RulesFn


def _ann(ctx: dict[str, Any]) -> dict[str, Any]:
    return ctx.get("annotations") or {}


def _prior_hit(text: str, ann: dict[str, Any]) -> bool:
    return any(mentions(text, t) and not negated_mention(text, t) for t in ann.get("prior_terms") or [] if t)


_SAME = re.compile(r"\b(identical|same|unchanged|no change|nothing changed|not changed|no object was|nothing was)\b", re.I)


def baseline_answer(ctx: dict[str, Any]) -> str:
    """What an annotation-only reader says: the original scene, unchanged."""
    ann, task, qtype, q = _ann(ctx), ctx.get("task"), ctx.get("qtype"), str(ctx.get("question", ""))
    objects = [o for o in ann.get("objects") or [] if o]
    count = ann.get("count")
    if qtype == "YN":
        if ctx.get("question_set") == "beaf":
            return "Yes" if any(mentions(q, o) for o in objects) else "No"
        if task == "dense_counting" and count is not None:
            nums = [int(n) for n in re.findall(r"\d+", q)]
            if len(nums) >= 2:
                return "Yes" if nums[0] <= count <= nums[1] else "No"
            return "Yes" if nums and nums[0] == count else "No"
        if task == "alteration_tracing":
            return "Yes" if _SAME.search(q) else "No"
        return "Yes" if _prior_hit(q, ann) else "No"
    if qtype == "MC":
        opts = list(ctx.get("options_list") or [])
        letters = [chr(65 + i) for i in range(len(opts))]
        pick = None
        if task == "dense_counting" and count is not None:
            for i, o in enumerate(opts):
                nums = [int(n) for n in re.findall(r"\d+", o)]
                if (len(nums) == 1 and nums[0] == count) or (len(nums) >= 2 and nums[0] <= count <= nums[1]):
                    pick = i
                    break
        elif task == "alteration_tracing":
            pick = next((i for i, o in enumerate(opts) if re.search(r"\b(nothing|no object|unchanged|no change)\b", o, re.I)), None)
        else:
            pick = next((i for i, o in enumerate(opts) if _prior_hit(o, ann)), None)
            if pick is None and _prior_hit(q, ann):  # a premise question: accept the premise
                pick = next((i for i, o in enumerate(opts) if not is_denial(o)), None)
        return letters[pick if pick is not None else 0] if letters else "A"
    # SA
    if task == "dense_counting" and count is not None:
        if re.search(r"\brange\b", q, re.I):
            return f"{max(0, count - 2)}-{count + 2}"
        return str(count)
    if task == "alteration_tracing":
        return "Nothing changed between the two pictures."
    if task == "counterfactual_attribute" and ann.get("original_attribute"):
        return f"It is {ann['original_attribute']}."
    if ann.get("target_name"):
        return f"I can see {ann['target_name']} there."
    return "I cannot tell."


def _reasoning(ctx: dict[str, Any], final: str) -> str:
    ann, task = _ann(ctx), ctx.get("task")
    if task == "relational_erasure":
        return f"The scene is the kind of place where {ann.get('target_name') or 'this object'} is usually found, so it should be there."
    if task == "counterfactual_attribute":
        return f"Objects like this are typically {ann.get('original_attribute') or 'as usual'}, so that is what I expect here."
    if task == "alteration_tracing":
        return "Both pictures show the same objects in the same places; they look identical."
    if task == "dense_counting":
        return f"Counting the instances one by one I reach {ann.get('count')}."
    return "Reasoning from what is typical."


def _answer_rules(ctx: dict[str, Any]) -> dict[str, Any]:
    final = baseline_answer(ctx)
    if ctx.get("cot"):
        return {"reasoning": _reasoning(ctx, final), "answer": final}
    return {"answer": final}


def _judge_rules(ctx: dict[str, Any]) -> dict[str, Any]:
    return offline_judge(ctx["task"], ctx["gold"], ctx["answer"], dict(ctx.get("rubric") or []), list(ctx.get("prior_terms") or []))


_ACTIVITY = re.compile(r"\b\w+ing\b")
_SCENE = re.compile(r"\b(scene|setting|place|kitchen|street|room|beach|park|usually|typically|commonly|often)\b", re.I)


def classify_subcause(task: str, response: str, facts: dict[str, Any] | None = None) -> str:
    """A keyword heuristic for the rules backend (the LLM prompt is the real classifier)."""
    t = (response or "").lower()
    if not t.strip():
        return "other"
    if task == "relational_erasure":
        if _SCENE.search(t):
            return "SC-3"
        if any(w not in ("nothing", "something", "thing", "looking", "morning", "during") for w in _ACTIVITY.findall(t)):
            return "SC-2"
        return "SC-1"
    if task == "counterfactual_attribute":
        new = str((facts or {}).get("new_attribute") or "")
        if new and mentions(t, new) and re.search(r"\b(but|however|actually|though)\b", t):
            return "SC-3"
        if re.search(r"\b(typically|usually|commonly|normally|known|expect)\b", t):
            return "SC-1"
        return "SC-2"
    if task == "alteration_tracing":
        if re.search(r"\b(identical|same|no difference|no change)\b", t):
            return "SC-1"
        if re.search(r"\b(changed|moved|removed|added|replaced|different)\b", t):
            return "SC-3"
        return "SC-2"
    if task == "dense_counting":
        if re.search(r"\b(rows?|columns?|grid|pattern|arranged|per row)\b", t):
            return "SC-2"
        if re.search(r"\bone by one\b|\b\d+\s*,\s*\d+\s*,\s*\d+", t):
            return "SC-3"
        return "SC-1"
    return "other"


def _subcause_rules(ctx: dict[str, Any]) -> dict[str, Any]:
    label = classify_subcause(ctx["task"], ctx["response"], dict(ctx.get("facts") or []))
    return {"label": label, "rationale": "keyword heuristic of the offline rules backend"}


def span_type_for(task: str, facts: dict[str, Any]) -> str:
    if task == "counterfactual_attribute":
        kind = str(facts.get("attribute_type", "")).lower()
        return "Color Attribute" if "colo" in kind else "Shape Attribute" if "shape" in kind else "Knowledge Error"
    if task == "dense_counting":
        return "Numerical Attribute"
    if task == "alteration_tracing":
        return "Spatial Relation"
    return "Object"


def _span_rules(ctx: dict[str, Any]) -> dict[str, Any]:
    response, task = str(ctx["response"]), ctx["task"]
    facts = dict(ctx.get("facts") or [])
    typ = span_type_for(task, facts)
    phrases = [(t, typ) for t in ctx.get("prior_terms") or [] if t]
    if task == "dense_counting" and facts.get("count") is not None:
        wrong = {n for n in re.findall(r"\b\d+\b", response) if n != str(facts["count"])}
        phrases += [(n, typ) for n in sorted(wrong)]
    if task == "alteration_tracing":
        phrases += [(p, typ) for p in ("identical", "the same", "no change")]
    spans = spans_from_phrases(response, phrases)
    return {"tagged_text": render_tagged(response, spans)}


# Prompt name -> rules answer, for every evaluation prompt.
RULES: dict[str, RulesFn] = {
    **{name: _answer_rules for name in ANSWER_SPECS},
    SA_JUDGE.name: _judge_rules,
    SUBCAUSE.name: _subcause_rules,
    SUBCAUSE_PAIR.name: _subcause_rules,
    SPAN_DETECT.name: _span_rules,
}

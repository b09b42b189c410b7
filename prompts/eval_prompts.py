"""Evaluation prompts: answering (YN / MC / SA, standard and CoT, one image or a pair), the
short-answer judge, sub-cause attribution and the MHALO-style span detector.

Each prompt is a template under ``prompts/templates/eval_*.j2`` plus its output schema. The
``rules`` backend answers every one of them offline:
- answering: a no-vision baseline that answers from the *original* annotations, so it falls
  for the prior on purpose (it "sees" the erased object and the original attribute, and no
  change between before and after) and gets dense counting right from the points;
- the judge: :func:`offline_judge`, the rule judge that also serves as the fallback when an
  LLM judge fails;
- sub-causes and spans: keyword heuristics over the reasoning text.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from prompts.eval_parsing import (
    HALLUCINATION_TYPES,
    clean,
    extract_number,
    extract_range,
    mentions,
    negated_mention,
    render_tagged,
    spans_from_phrases,
)
from prompts.rules import rules_answer
from prompts.spec import PromptSpec, register_prompt

QTYPES = ("YN", "MC", "SA")
MODES = ("standard", "cot")

TASKS: dict[str, dict[str, str]] = {
    "relational_erasure": {
        "label": "relational erasure",
        "cause": "co-occurrence bias: one member of a pair of objects that usually appear together was erased",
        "note": "one object that usually appears together with another was erased from the picture.",
    },
    "counterfactual_attribute": {
        "label": "counterfactual attribute",
        "cause": "language priors: an object's typical attribute was changed into an unusual one",
        "note": "an object's typical attribute (colour, material, ...) was changed into an unusual one.",
    },
    "alteration_tracing": {
        "label": "alteration tracing",
        "cause": "cross-image comparison: one small edit separates a before and an after picture",
        "note": "the second picture differs from the first by one small edit.",
    },
    "dense_counting": {
        "label": "dense counting",
        "cause": "fine-grained perception: many similar objects must be counted exactly",
        "note": "the picture holds many similar objects whose exact number is known.",
    },
}

# Sub-cause taxonomy per task (facts from papers/reactbench.txt Appendix A.1; wording ours).
SUBCAUSES: dict[str, tuple[tuple[str, str, str], ...]] = {
    "relational_erasure": (
        ("SC-1", "part-whole completion", "a visible object makes the model fill in a part or partner that belongs to it but was erased"),
        ("SC-2", "activity-entity completion", "an action or activity in the scene makes the model supply the participant that such an activity normally involves"),
        ("SC-3", "scene-object association", "the kind of place or scene makes the model list objects typical of it that are not there"),
    ),
    "counterfactual_attribute": (
        ("SC-1", "blind prior assertion", "the model states the usual attribute from world knowledge without really looking"),
        ("SC-2", "common attribute projection", "the model finds the right object but describes it with its usual attribute instead of the edited one"),
        ("SC-3", "correct perception overridden", "the model first notices the unusual attribute, then argues itself back to the usual one"),
    ),
    "alteration_tracing": (
        ("SC-1", "cross-image state assimilation", "the model describes both pictures yet treats them as the same, missing the edit"),
        ("SC-2", "fine-grained blindness", "the model compares only coarsely and overlooks a small local change"),
        ("SC-3", "change misbinding", "the model sees that something changed but attaches it to the wrong object, place or operation"),
    ),
    "dense_counting": (
        ("SC-1", "anchor-free scan miss", "the model skips scattered or weakly anchored instances while scanning"),
        ("SC-2", "regular shortcut error", "the model assumes a regular layout (rows x columns, a pattern) and misses irregular instances"),
        ("SC-3", "sequential enumeration deficiency", "the model enumerates one by one but loses track of the running count"),
    ),
}
SUBCAUSE_LABELS = ("SC-1", "SC-2", "SC-3", "other")

# MHALO's twelve types (papers/mhalo.txt Table 1; wording ours).
TYPE_DEFINITIONS: dict[str, str] = {
    "Object": "an object that is not there, or is misidentified",
    "OCR": "text in the picture read wrongly",
    "Numerical Attribute": "a wrong number or count of something",
    "Color Attribute": "a wrong colour",
    "Shape Attribute": "a wrong shape",
    "Spatial Attribute": "a wrong position, orientation or distance of one object",
    "Numerical Relation": "a wrong comparison of quantities between objects",
    "Spatial Relation": "a wrong spatial relation between objects",
    "Logical Error": "a reasoning step that does not follow",
    "Calculation Error": "an arithmetic mistake",
    "Knowledge Error": "wrong world knowledge, or an inference common sense or physics rules out",
    "Query Misunderstanding": "an answer to a different question than the one asked",
}
assert tuple(TYPE_DEFINITIONS) == HALLUCINATION_TYPES


class _Out(BaseModel):
    model_config = ConfigDict(extra="ignore")


class FreeAnswer(_Out):
    """Answers are free text read by ``prompts.eval_parsing``; this schema documents the rules format."""

    answer: str
    reasoning: str | None = None


class JudgeVerdict(_Out):
    verdict: Literal["correct", "hallucination"]
    fallback: bool = False
    reason: str = ""

    @field_validator("verdict", mode="before")
    @classmethod
    def _norm_verdict(cls, v: Any) -> Any:
        s = str(v).strip().strip(".").lower().replace("no_hallucination", "correct").replace("no hallucination", "correct")
        if s in ("wrong", "incorrect", "hallucinated"):
            return "hallucination"
        return s


class SubcauseLabel(_Out):
    label: Literal["SC-1", "SC-2", "SC-3", "other"]
    rationale: str = ""

    @field_validator("label", mode="before")
    @classmethod
    def _norm_label(cls, v: Any) -> Any:
        s = str(v).strip().strip(".").upper().replace("SC", "SC-").replace("--", "-").replace(" ", "")
        m = re.search(r"SC-?([123])", s)
        if m:
            return f"SC-{m.group(1)}"
        return "other" if s.lower() in ("OTHER", "UNCLASSIFIABLE") or "OTHER" in s or "UNCLASSIFIABLE" in s else v


class TaggedText(_Out):
    tagged_text: str


def _answer_name(qtype: str, mode: str, n_images: int) -> str:
    return f"eval_{qtype.lower()}_{mode}" + ("_pair" if n_images == 2 else "")


ANSWER_SPECS: dict[str, PromptSpec] = {}
for _q in QTYPES:
    for _m in MODES:
        for _n in (1, 2):
            ANSWER_SPECS[_answer_name(_q, _m, _n)] = register_prompt(
                PromptSpec(_answer_name(_q, _m, _n), "1", f"eval_answer_{_q.lower()}.j2", FreeAnswer, _n)
            )

SA_JUDGE = register_prompt(PromptSpec("eval_sa_judge", "1", "eval_sa_judge.j2", JudgeVerdict, 0))
SUBCAUSE = register_prompt(PromptSpec("eval_subcause", "1", "eval_subcause.j2", SubcauseLabel, 0))
SPAN_DETECT = register_prompt(PromptSpec("eval_span_detect", "1", "eval_span_detect.j2", TaggedText, 0))


def answer_spec(qtype: str, mode: str, n_images: int) -> PromptSpec:
    """The answering prompt for a question type, a mode and one image or a before/after pair."""
    if qtype not in QTYPES or mode not in MODES or n_images not in (1, 2):
        raise ValueError(f"no answering prompt for qtype={qtype!r} mode={mode!r} images={n_images}")
    return ANSWER_SPECS[_answer_name(qtype, mode, n_images)]


# -- the offline judge -------------------------------------------------------------------

_DENIAL = re.compile(
    r"\b(nothing|neither|none|no such|not there|no longer|does not exist|doesn t exist|isn t there|is not there|"
    r"there is no|there are no|cannot be determined|can t be determined|empty|unchanged|no change|no object|absent|bare)\b"
)
_STOP = set(
    "a an the of at in on to is are was were it its this that there here and or with by for from be has had have as "
    "what which who where picture image photo scene some one".split()
)


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", (text or "").lower().replace("'", " ")).split())


def _content(text: str) -> set[str]:
    return {w.rstrip("s") for w in _norm(text).split() if w not in _STOP and len(w) > 1}


def _overlap(answer: str, target: str) -> float:
    want = _content(target)
    if not want:
        return 0.0
    return len(want & _content(answer)) / len(want)


def offline_judge(
    task: str,
    gold: str,
    answer: str,
    rubric: dict[str, Any] | None = None,
    prior_terms: list[str] | None = None,
) -> dict[str, Any]:
    """Grade a short answer by rules: ``{"verdict", "fallback", "reason"}``.

    Dense counting compares numbers (exact, or a range that holds the count and is at most
    ``max_span`` wide). Elsewhere, an answer that asserts a prior term (the erased object, the
    original attribute) is a hallucination that falls back on the prior; a denial is right when
    the reference denies too (or for erasures, where "nothing there" is right); otherwise half
    of the reference's content words (or of a rubric target) must appear.
    """
    rubric = rubric or {}
    text = clean(answer)
    if not text:
        return {"verdict": "hallucination", "fallback": False, "reason": "empty answer"}
    if task == "dense_counting":
        return _judge_count(text, gold, rubric)
    norm = _norm(text)
    # Mentions inside the new attribute ("dark red" vs original "red") do not count as the prior.
    masked = text
    for keep in (rubric.get("new_attribute"), rubric.get("remaining_at_location")):
        if keep:
            masked = re.sub(re.escape(str(keep)), " ", masked, flags=re.I)
    for term in prior_terms or []:
        if term and mentions(masked, term) and not negated_mention(masked, term):
            return {"verdict": "hallucination", "fallback": True, "reason": f"asserts {term!r}, which the edit removed"}
    denies = bool(_DENIAL.search(norm))
    gold_denies = bool(_DENIAL.search(_norm(gold))) or task == "relational_erasure"
    if denies and gold_denies:
        return {"verdict": "correct", "fallback": False, "reason": "denies, as the reference does"}
    targets = [gold] + [str(rubric[k]) for k in ("new_attribute", "remaining_at_location") if rubric.get(k)]
    if task == "alteration_tracing" and rubric.get("object"):
        targets.append(f"{rubric['object']} {rubric.get('operation', '')}")
    best = max(_overlap(text, t) for t in targets)
    if best >= 0.5 and not (denies and not gold_denies):
        return {"verdict": "correct", "fallback": False, "reason": f"matches the reference ({best:.0%} of its content words)"}
    return {"verdict": "hallucination", "fallback": False, "reason": "does not match the reference"}


def _judge_count(text: str, gold: str, rubric: dict[str, Any]) -> dict[str, Any]:
    try:
        count = int(str(rubric.get("count", gold)).strip())
    except ValueError:
        raise ValueError(f"dense_counting rubric needs an integer count, got {rubric.get('count', gold)!r}") from None
    if rubric.get("max_span"):
        span = int(str(rubric["max_span"]))
        rng = extract_range(text)
        ok = rng is not None and rng[0] <= count <= rng[1] and rng[1] - rng[0] + 1 <= span
        return {"verdict": "correct" if ok else "hallucination", "fallback": False, "reason": f"range {rng} vs count {count} (max span {span})"}
    n = extract_number(text)
    return {"verdict": "correct" if n == count else "hallucination", "fallback": False, "reason": f"number {n} vs count {count}"}


# -- rules answers ------------------------------------------------------------------------


def _ann(ctx: dict[str, Any]) -> dict[str, Any]:
    return ctx.get("annotations") or {}


def _prior_hit(text: str, ann: dict[str, Any]) -> bool:
    return any(mentions(text, t) and not negated_mention(text, t) for t in ann.get("prior_terms") or [] if t)


_SAME = re.compile(r"\b(identical|same|unchanged|no change|nothing changed|not changed|no object was|nothing was)\b", re.I)


def is_denial(text: str) -> bool:
    """An option or answer that denies ("No such object", "None of these", "Nothing changed")."""
    return bool(_DENIAL.search(_norm(text)))


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


for _name in ANSWER_SPECS:
    rules_answer(_name)(_answer_rules)


@rules_answer("eval_sa_judge")
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


@rules_answer("eval_subcause")
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


@rules_answer("eval_span_detect")
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

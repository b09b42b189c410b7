"""Evaluation prompts: answering (YN / MC / SA, standard and CoT, one image or a pair), the
short-answer judge, sub-cause attribution and the MHALO-style span detector.

Each prompt is a template under ``prompts/templates/eval_*.j2`` plus its output schema, with
the task taxonomy the templates are filled from. The ``rules`` backend's offline answers live
in ``prompts/eval_rules.py``, the offline judge in ``prompts/offline_judge.py``; the
evaluation itself (answer, score, judge, attribute, spans) in ``tasks/release/evaluate/``.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from prompts.eval_parsing import HALLUCINATION_TYPES
from prompts.spec import PromptSpec

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


ANSWER_SPECS: dict[str, PromptSpec] = {
    _answer_name(q, m, n): PromptSpec(_answer_name(q, m, n), "1", f"eval_answer_{q.lower()}.j2", FreeAnswer, n)
    for q in QTYPES
    for m in MODES
    for n in (1, 2)
}

SA_JUDGE = PromptSpec("eval_sa_judge", "1", "eval_sa_judge.j2", JudgeVerdict, 0)
SUBCAUSE = PromptSpec("eval_subcause", "2", "eval_subcause.j2", SubcauseLabel, 1)
SUBCAUSE_PAIR = PromptSpec("eval_subcause_pair", "2", "eval_subcause.j2", SubcauseLabel, 2)
SPAN_DETECT = PromptSpec("eval_span_detect", "1", "eval_span_detect.j2", TaggedText, 0)


def answer_spec(qtype: str, mode: str, n_images: int) -> PromptSpec:
    """The answering prompt for a question type, a mode and one image or a before/after pair."""
    if qtype not in QTYPES or mode not in MODES or n_images not in (1, 2):
        raise ValueError(f"no answering prompt for qtype={qtype!r} mode={mode!r} images={n_images}")
    return ANSWER_SPECS[_answer_name(qtype, mode, n_images)]

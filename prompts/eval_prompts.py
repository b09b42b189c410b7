"""Evaluation prompts: answering (YN / MC / SA, standard and CoT, one image or a pair), the
short-answer judge, sub-cause attribution and the MHALO-style span detector.

Each prompt is a template under ``prompts/templates/eval_*.j2`` plus its output schema, with
the task taxonomy the templates are filled from (each task's ``TaskSpec.eval_text`` and
``subcauses``, looked up by ``tasks/engine/taxonomy.py``). The ``rules`` backend's offline answers live
in ``prompts/eval_rules.py``, the offline judge in ``prompts/offline_judge.py``; the
evaluation itself (answer, score, judge, attribute, spans) in ``tasks/release/evaluate/``.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, StringConstraints, field_validator

from prompts.eval_parsing import HALLUCINATION_TYPES
from prompts.spec import PromptSpec

QTYPES = ("YN", "MC", "SA")
MODES = ("standard", "cot")


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
    def _norm_verdict(cls, v: object) -> object:
        s = (
            str(v)
            .strip()
            .strip(".")
            .lower()
            .replace("no_hallucination", "correct")
            .replace("no hallucination", "correct")
        )
        if s in ("wrong", "incorrect", "hallucinated"):
            return "hallucination"
        return s


class ExtractedAnswer(_Out):
    """What a judge read in a reply the rules could not: "Yes", "No", a letter, or "none"."""

    answer: str


class SubcauseLabel(_Out):
    """One of the task's codes SC-1..SC-n (``TaskSpec.subcauses``: a task declares as many as it
    needs, the prompt lists them) or ``other``."""

    label: Annotated[str, StringConstraints(pattern=r"^(SC-[1-9][0-9]*|other)$")]
    rationale: str = ""

    @field_validator("label", mode="before")
    @classmethod
    def _norm_label(cls, v: object) -> object:
        s = str(v).strip().strip(".").upper().replace("SC", "SC-").replace("--", "-").replace(" ", "")
        m = re.search(r"SC-?([1-9][0-9]*)", s)
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
EXTRACT = PromptSpec("eval_extract", "1", "eval_extract.j2", ExtractedAnswer, 0)
SUBCAUSE = PromptSpec("eval_subcause", "2", "eval_subcause.j2", SubcauseLabel, 1)
SUBCAUSE_PAIR = PromptSpec("eval_subcause_pair", "2", "eval_subcause.j2", SubcauseLabel, 2)
SPAN_DETECT = PromptSpec("eval_span_detect", "1", "eval_span_detect.j2", TaggedText, 0)


def answer_spec(qtype: str, mode: str, n_images: int) -> PromptSpec:
    """The answering prompt for a question type, a mode and one image or a before/after pair."""
    if qtype not in QTYPES or mode not in MODES or n_images not in (1, 2):
        raise ValueError(f"no answering prompt for qtype={qtype!r} mode={mode!r} images={n_images}")
    return ANSWER_SPECS[_answer_name(qtype, mode, n_images)]

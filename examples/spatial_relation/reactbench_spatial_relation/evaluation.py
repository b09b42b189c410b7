"""The task's evaluation side: the prior a wrong answer falls back on, the offline baseline's
answers (``rules:rules-v1``), and the keyword rules for sub-causes and spans.

The baseline reads only the original annotations, so it reports the usual relation ("the cup is
on the table") whatever the edited picture shows: a no-vision reference point, wrong on purpose.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from reactbench_spatial_relation import geometry

_SIDE_WORDS = re.compile(r"\b(left|right|above|below|over|under|beneath|top|bottom)\b", re.I)
_HABIT_WORDS = re.compile(r"\b(usually|typically|normally|always|commonly|belongs?|expected|tend to)\b", re.I)
_CONTACT_WORDS = re.compile(r"\b(on|in|inside|resting|sitting|placed|beside|next to|near|close to|touching)\b", re.I)


def prior_terms(ann: Mapping[str, Any]) -> list[str]:
    """The ``prior_terms`` hook: the usual relation as a phrase ("on the table"); asserting it is
    the hallucination."""
    usual = ann.get("usual_relation")
    return [str(usual)] if usual else []


def _mentions(text: str, phrase: str) -> bool:
    return bool(phrase) and re.search(rf"\b{re.escape(phrase.lower())}\b", " ".join(text.lower().split())) is not None


def baseline_answer(ctx: Mapping[str, Any]) -> str:
    """The annotation-only answer: the usual relation holds."""
    ann = ctx.get("annotations") or {}
    terms = [t for t in ann.get("prior_terms") or [] if t]
    qtype, question = ctx.get("qtype"), str(ctx.get("question", ""))
    if qtype == "YN":
        return "Yes" if any(_mentions(question, t) for t in terms) else "No"
    if qtype == "MC":
        opts = list(ctx.get("options_list") or [])
        pick = next((i for i, o in enumerate(opts) if any(_mentions(o, t) for t in terms)), 0)
        return chr(65 + pick) if opts else "A"
    return f"It is {terms[0]}." if terms else "I cannot tell."


def reasoning(ctx: Mapping[str, Any]) -> str:
    terms = (ctx.get("annotations") or {}).get("prior_terms") or []
    where = terms[0] if terms else "where such objects usually are"
    return f"Objects like this are normally kept {where}, so that is where it should be."


def classify_subcause(response: str) -> str:
    """SC-3 when the answer names a side, SC-1 when it argues from habit, else SC-2."""
    t = response or ""
    if not t.strip():
        return "other"
    if _HABIT_WORDS.search(t):
        return "SC-1"
    if _SIDE_WORDS.search(t) and not _CONTACT_WORDS.search(t):
        return "SC-3"
    return "SC-2"


SPAN_TYPE = "Spatial Relation"


def span_phrases(ctx: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Phrases a wrong answer is tagged at: the usual relation and every relation phrase."""
    terms = [t for t in ctx.get("prior_terms") or [] if t]
    return [(t, SPAN_TYPE) for t in terms] + [(p, SPAN_TYPE) for p in geometry.PHRASES.values() if len(p) > 3]

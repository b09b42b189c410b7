"""The task's evaluation side: the prior a wrong answer falls back on, the offline baseline's
answers (``rules:rules-v1``), and the keyword rules for sub-causes and spans.

The baseline reads only the original annotations, so it reports the usual relation ("the cup is
on the table") whatever the edited picture shows: a no-vision reference point, wrong on purpose.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from reactbench_spatial_relation import geometry
from tasks.plugin_api import EvalRules

_SIDE_WORDS = re.compile(r"\b(left|right|above|below|over|under|beneath|top|bottom)\b", re.IGNORECASE)
_HABIT_WORDS = re.compile(r"\b(usually|typically|normally|always|commonly|belongs?|expected|tend to)\b", re.IGNORECASE)
_CONTACT_WORDS = re.compile(
    r"\b(on|in|inside|resting|sitting|placed|beside|next to|near|close to|touching)\b", re.IGNORECASE
)


def prior_terms(ann: Mapping[str, Any]) -> list[str]:
    """The ``prior_terms`` hook: the usual relation as a phrase ("on the table"), from the item's
    rubric; asserting it is the hallucination."""
    usual = (ann.get("rubric") or {}).get("usual_relation")
    return [str(usual)] if usual else []


def _says(text: str, phrase: str) -> bool:
    return bool(phrase) and re.search(rf"\b{re.escape(phrase.lower())}\b", " ".join(text.lower().split())) is not None


class SpatialRules(EvalRules):
    """The ``eval_rules`` hook: the offline baseline's behaviour for this task."""

    def answer(self, ctx: dict[str, Any]) -> str | None:
        """Annotation-only answers: the usual relation holds (yes to it, its option, it as the answer)."""
        terms = [t for t in (ctx.get("annotations") or {}).get("prior_terms") or [] if t]
        if not terms:
            return None
        qtype, question = ctx.get("qtype"), str(ctx.get("question", ""))
        if qtype == "YN":
            return "Yes" if any(_says(question, t) for t in terms) else "No"
        if qtype == "MC":
            opts = list(ctx.get("options_list") or [])
            pick = next((i for i, o in enumerate(opts) if any(_says(o, t) for t in terms)), 0)
            return chr(65 + pick) if opts else "A"
        return f"It is {terms[0]}."

    def reasoning(self, ctx: dict[str, Any]) -> str:
        terms = (ctx.get("annotations") or {}).get("prior_terms") or []
        where = terms[0] if terms else "where such objects usually are"
        return f"Objects like this are normally kept {where}, so that is where it should be."

    def subcause(self, response: str, facts: dict[str, Any]) -> str:
        """SC-1 when the answer argues from habit, SC-3 when it names a side but no contact, else SC-2."""
        if _HABIT_WORDS.search(response):
            return "SC-1"
        if _SIDE_WORDS.search(response) and not _CONTACT_WORDS.search(response):
            return "SC-3"
        return "SC-2"

    def span_type(self, facts: dict[str, Any]) -> str:
        return "Spatial Relation"

    def span_phrases(self, response: str, facts: dict[str, Any]) -> list[str]:
        """Every relation phrase the response states (the prior term is tagged by the core)."""
        return [p for p in geometry.PHRASES.values() if len(p) > 3 and _says(response, p)]


RULES = SpatialRules()

"""Reusable field types for prompt output schemas (English-only text, verb phrases, ...)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field

_CJK_RE = re.compile(r"[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff00-\uffef]")
_LEADING_PREP_RE = re.compile(r"^(on|in|at|near|beside|by|under|above|over|behind|inside|next to)\b", re.IGNORECASE)
_ARTICLE_RE = re.compile(r"^(a|an|the)\s+", re.IGNORECASE)


def _english(value: str) -> str:
    value = value.strip()
    if not value:
        raise ValueError("must not be empty")
    if _CJK_RE.search(value):
        raise ValueError("must be written in English (found Chinese/Japanese/Korean characters)")
    return value


def _no_leading_preposition(value: str) -> str:
    value = _english(value)
    if _LEADING_PREP_RE.match(value):
        raise ValueError("must be a noun phrase without a leading preposition (drop 'on', 'in', 'at', ...)")
    return value


def _no_article(value: str) -> str:
    value = _english(value)
    if _ARTICLE_RE.match(value):
        raise ValueError("must not start with an article (a, an, the)")
    return value


def _past_predicate(value: str) -> str:
    value = _english(value)
    if not re.match(r"^(was|had)\b", value, re.IGNORECASE):
        raise ValueError("must be a past-tense verb phrase starting with 'was' or 'had'")
    return value


EnglishStr = Annotated[str, AfterValidator(_english)]
LocationPhrase = Annotated[str, AfterValidator(_no_leading_preposition)]
ObjectName = Annotated[str, AfterValidator(_no_article)]
PastPredicate = Annotated[str, AfterValidator(_past_predicate)]
ThreeDistinct = Annotated[list[EnglishStr], Field(min_length=3, max_length=3)]


def distinct(values: list[str], what: str) -> list[str]:
    """Raise when two entries say the same thing (case and spacing ignored)."""
    seen = set()
    for v in values:
        k = " ".join(v.lower().split())
        if k in seen:
            raise ValueError(f"{what}: the entries must be distinct, {v!r} repeats")
        seen.add(k)
    return values

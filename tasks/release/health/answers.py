"""Normalising gold and given answers so that a constant answer can be compared with a column."""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.compute as pc

_PUNCT = r"[\s\.\,\;\:\!\?]+$"


def normalise_text(text: str) -> str:
    """A short answer as compared here: lower case, inner spaces collapsed, end punctuation dropped."""
    return re.sub(_PUNCT, "", re.sub(r"\s+", " ", str(text).strip().lower()))


def normalised_gold(questions: pa.Table) -> pa.ChunkedArray:
    """The gold column in one comparable form: "yes"/"no", an upper-case letter, or a short answer
    normalised as :func:`normalise_text` does (columnar)."""
    gold = pc.utf8_lower(pc.utf8_trim_whitespace(questions.column("gold")))
    gold = pc.replace_substring_regex(gold, r"\s+", " ")
    gold = pc.replace_substring_regex(gold, _PUNCT, "")
    is_mc = pc.equal(questions.column("qtype"), "MC")
    return pc.if_else(is_mc, pc.utf8_upper(gold), gold)


def answer_matches(qtype: str, answer: str, gold: str) -> bool:
    """Whether one given answer equals the normalised gold (exact, after normalising)."""
    if qtype == "MC":
        return answer.strip().upper() == gold
    return normalise_text(answer) == gold

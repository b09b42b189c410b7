"""Scoring one reply: read the Yes/No or the option letter, compare with the gold answer, and
say whether a wrong answer fell back on the prior (FREAK's HalluRate numerator).

Short answers are only read here (the answer segment); the judge (``tasks.release.evaluate.judge``)
decides whether they are right.
"""

from __future__ import annotations

from typing import Any

from prompts.eval_parsing import answer_segment, extract_choice, extract_yes_no, mentions, negated_mention
from prompts.offline_judge import is_denial
from tasks.release.items import answer_id, probes_prior

ROW_COLUMNS = (
    "edit_id",
    "editor",
    "task",
    "variant",
    "question_set",
    "qid",
    "qtype",
    "dimension",
    "rotation",
    "image_role",
    "text",
    "options",
    "gold",
)


def read_reply(qtype: str, raw: str, options: list[str], cot: bool) -> str | None:
    """The answer a reply gives: "Yes"/"No", an option letter, or the short-answer text; None
    when it cannot be read unambiguously. The lmms-eval export calls the same parsers."""
    if qtype == "YN":
        return extract_yes_no(raw, cot)
    if qtype == "MC":
        return extract_choice(raw, options, cot)
    return answer_segment(raw, cot) or None


def choice_correct(qtype: str, parsed: str | None, gold: str) -> bool:
    """A Yes/No or letter answer against the gold answer (case-insensitive)."""
    if parsed is None:
        return False
    if qtype == "YN":
        return parsed.lower() == str(gold).strip().lower()
    return parsed == str(gold).strip().upper()


def score_reply(
    q: dict[str, Any],
    mode: str,
    raw: str,
    error: str | None,
    ann: dict[str, Any],
    *,
    backend: str,
    model: str,
    unverified: bool,
) -> dict[str, Any]:
    """One answer row (``tasks.release.evaluate.schemas.ANSWERS``) for a reply; SA rows await the judge."""
    cot = mode == "cot"
    row: dict[str, Any] = {
        "id": answer_id(q["id"], mode, backend, model),
        "question_id": q["id"],
        **{k: q.get(k) for k in ROW_COLUMNS},
        "prior_options": prior_letters(q, ann.get("prior_terms") or []) if q["qtype"] == "MC" else None,
        "mode": mode,
        "raw_response": raw,
        "error": error,
        "unverified": unverified,
        "beaf_related": (q.get("dimension") == "removed") if q["question_set"] == "beaf" else None,
        "prior_fallback": None,
        "judge": "extract",
    }
    if error is not None:
        return {**row, "status": "error", "parsed": None, "parsed_by": None, "correct": False}
    prior_applies = probes_prior(q["task"]) and q["question_set"] == "main" and bool(ann.get("prior_terms"))
    parsed = read_reply(q["qtype"], raw, list(q.get("options") or []), cot)
    if q["qtype"] == "YN":
        row["correct"] = choice_correct("YN", parsed, q["gold"])
        if prior_applies and q.get("prior_options") is not None:  # a balancing twin: the prior says "No"
            row["prior_fallback"] = parsed in q["prior_options"]
        elif prior_applies and str(q["gold"]).strip().lower() == "no":
            row["prior_fallback"] = parsed == "Yes"
    elif q["qtype"] == "MC":
        row["correct"] = choice_correct("MC", parsed, q["gold"])
        if row["prior_options"] and q["question_set"] == "main":
            row["prior_fallback"] = parsed in row["prior_options"]
    else:
        row["correct"] = False  # set by the judge
        row["judge"] = None
    row["parsed"] = parsed
    row["status"] = "ok" if parsed is not None else "unparseable"
    row["parsed_by"] = "rules" if parsed is not None else None
    return row


def prior_letters(q: dict[str, Any], prior_terms: list[str]) -> list[str]:
    """Letters of the options that fall back on the prior, in this presentation.

    The qa stage records them when it renders the question (``prior_options``: the template's
    commonsense distractor(s); an empty list means the question has none, so HalluRate leaves
    it out). Rows written before that column existed (null) fall back to
    :func:`matched_prior_options` on the option texts.
    """
    recorded = q.get("prior_options")
    if recorded is not None:
        return sorted(str(x) for x in recorded)
    if not probes_prior(q["task"]):
        return []
    return sorted(matched_prior_options(q, prior_terms))


def _asserts(text: str, prior_terms: list[str]) -> bool:
    return any(mentions(text, t) and not negated_mention(text, t) for t in prior_terms if t)


def matched_prior_options(q: dict[str, Any], prior_terms: list[str]) -> set[str]:
    """Letters of the options that fall back on the prior, found by their text: those asserting a
    prior term (the erased object, the original attribute); for a premise question that itself
    asserts it ("The colour of the <erased object> is:"), every wrong option that accepts the premise."""
    gold = str(q.get("gold") or "").strip().upper()
    options = list(q.get("options") or [])
    out = {chr(65 + i) for i, o in enumerate(options) if chr(65 + i) != gold and _asserts(o, prior_terms)}
    if not out and _asserts(q.get("text") or "", prior_terms):
        out = {chr(65 + i) for i, o in enumerate(options) if chr(65 + i) != gold and not is_denial(o)}
    return out


def gold_text(a: dict[str, Any]) -> str:
    """The gold answer in words: "B. a bare bun" for MC, else the gold itself."""
    options = list(a.get("options") or [])
    gold = str(a["gold"])
    i = ord(gold[:1].upper() or "@") - 65
    return f"{gold}. {options[i]}" if a["qtype"] == "MC" and 0 <= i < len(options) else gold

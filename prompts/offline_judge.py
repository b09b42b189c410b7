"""The offline short-answer judge: grades a short answer against its reference by rules.

It serves three callers that must agree verdict for verdict: the ``rules`` backend's answer to
the ``eval_sa_judge`` prompt, the fallback of ``reactbench eval`` when an LLM judge fails, and
the scoring hooks of an exported lmms-eval task (which ship a verbatim copy of this file and
of ``prompts/eval_parsing.py``). Keep it standard-library only and import nothing else of ours:
it knows no task; each task names its rule (:data:`RULES`) through its ``sa_judge`` hook.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TypedDict

from prompts.eval_parsing import (
    answer_segment,
    clean,
    extract_choice,
    extract_number,
    extract_range,
    extract_yes_no,
    mentions,
    negated_mention,
)

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


# The judging rules a task can pick (its ``sa_judge`` hook names one of these constants, so a
# release writes the rule's name into its task table and this copy dispatches on it).
OVERLAP = "overlap"  # content words of the reference (or a rubric target) must appear
DENIAL = "denial"  # as OVERLAP, and "nothing there" is always right (something was erased)
CHANGE = "change"  # as OVERLAP, and naming the changed object with the operation is right too
COUNT = "count"  # numbers: exact, or a range that holds the count and is at most ``max_span`` wide
RULES = (OVERLAP, DENIAL, CHANGE, COUNT)


class Judgement(TypedDict):
    """One rule-based grade: ``correct`` or ``hallucination``, whether the answer fell back on the
    prior (the erased object, the original attribute), and why."""

    verdict: str
    fallback: bool
    reason: str


def offline_judge(
    gold: str,
    answer: str,
    rubric: Mapping[str, object] | None = None,
    prior_terms: list[str] | None = None,
    rule: str = OVERLAP,
) -> Judgement:
    """Grade a short answer by rules: ``{"verdict", "fallback", "reason"}``.

    ``rule`` (one of :data:`RULES`, the task's choice) decides what counts. ``COUNT`` compares
    numbers (exact, or a range that holds the count and is at most ``max_span`` wide).
    Otherwise, an answer that asserts a prior term (the erased object, the original attribute)
    is a hallucination that falls back on the prior; a denial is right when the reference
    denies too (or always under ``DENIAL``); otherwise half of the reference's content words
    (or of a rubric target; under ``CHANGE`` also the changed object and operation) must appear.
    """
    if rule not in RULES:
        raise ValueError(f"unknown judging rule {rule!r}; choices: {', '.join(RULES)}")
    rubric = rubric or {}
    text = clean(answer)
    if not text:
        return {"verdict": "hallucination", "fallback": False, "reason": "empty answer"}
    if rule == COUNT:
        return _judge_count(text, gold, rubric)
    norm = _norm(text)
    # Mentions inside the new attribute ("dark red" vs original "red") do not count as the prior.
    masked = text
    for keep in (rubric.get("new_attribute"), rubric.get("remaining_at_location")):
        if keep:
            masked = re.sub(re.escape(str(keep)), " ", masked, flags=re.I)
    for term in prior_terms or []:
        if term and mentions(masked, term) and not negated_mention(masked, term):
            return {
                "verdict": "hallucination",
                "fallback": True,
                "reason": f"asserts {term!r}, which the edit removed",
            }
    denies = bool(_DENIAL.search(norm))
    gold_denies = bool(_DENIAL.search(_norm(gold))) or rule == DENIAL
    if denies and gold_denies:
        return {"verdict": "correct", "fallback": False, "reason": "denies, as the reference does"}
    targets = [gold] + [str(rubric[k]) for k in ("new_attribute", "remaining_at_location") if rubric.get(k)]
    if rule == CHANGE and rubric.get("object"):
        targets.append(f"{rubric['object']} {rubric.get('operation', '')}")
    best = max(_overlap(text, t) for t in targets)
    if best >= 0.5 and not (denies and not gold_denies):
        return {
            "verdict": "correct",
            "fallback": False,
            "reason": f"matches the reference ({best:.0%} of its content words)",
        }
    return {"verdict": "hallucination", "fallback": False, "reason": "does not match the reference"}


def grade_reply(
    qtype: str,
    reply: str | None,
    gold: str,
    options: list[str] | None = None,
    rubric: Mapping[str, object] | None = None,
    prior_terms: list[str] | None = None,
    rule: str = OVERLAP,
) -> bool:
    """Whether ``reactbench eval`` (standard mode, no LLM judge) scores ``reply`` as right: the
    Yes/No or letter it commits to equals the gold; a short answer's segment passes
    :func:`offline_judge` under the task's rule (a malformed rubric is not right). The scoring
    hooks a release ships for other evaluators (lmms-eval, VLMEvalKit) grade through this."""
    reply = reply or ""
    gold = str(gold).strip()
    if qtype == "YN":
        parsed = extract_yes_no(reply, False)
        return parsed is not None and parsed.lower() == gold.lower()
    if qtype == "MC":
        parsed = extract_choice(reply, list(options or []), False)
        return parsed is not None and parsed == gold.upper()
    answer = answer_segment(reply, False) or reply
    try:
        return offline_judge(gold, answer, rubric, prior_terms, rule)["verdict"] == "correct"
    except ValueError:
        return False


def _judge_count(text: str, gold: str, rubric: Mapping[str, object]) -> Judgement:
    try:
        count = int(str(rubric.get("count", gold)).strip())
    except ValueError:
        raise ValueError(f"a counting rubric needs an integer count, got {rubric.get('count', gold)!r}") from None
    if rubric.get("max_span"):
        span = int(str(rubric["max_span"]))
        rng = extract_range(text)
        ok = rng is not None and rng[0] <= count <= rng[1] and rng[1] - rng[0] + 1 <= span
        return {
            "verdict": "correct" if ok else "hallucination",
            "fallback": False,
            "reason": f"range {rng} vs count {count} (max span {span})",
        }
    n = extract_number(text)
    return {
        "verdict": "correct" if n == count else "hallucination",
        "fallback": False,
        "reason": f"number {n} vs count {count}",
    }


def is_denial(text: str) -> bool:
    """An option or answer that denies ("No such object", "None of these", "Nothing changed")."""
    return bool(_DENIAL.search(_norm(text)))

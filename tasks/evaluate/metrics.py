"""Benchmark metrics, all in percent (0-100), computed from scored answer rows.

An answer row (see ``tasks.evaluate.schemas.ANSWERS``) needs: ``task``, ``mode``, ``qtype``,
``qid``, ``dimension``, ``question_set``, ``correct`` and, where relevant, ``edit_id``,
``rotation``, ``image_role``, ``text``, ``beaf_related``, ``prior_fallback``.

- Accuracy per any grouping (task / type / dimension / qid / editor / mode).
- React-Score (SPEC section 9): S_t^m = 0.5 A_SA + 0.25 A_MC + 0.25 A_YN, S_t the mean over
  standard and CoT, R = 0.3 S_RE + 0.2 S_CA + 0.2 S_AT + 0.3 S_DC, on the ``main`` set.
- Cyclic MC: the rotations of one MC question count as one question, correct only when
  every rotation is correct (FREAK's position-bias-free scoring).
- BEAF (papers/beaf.txt eqs. 1-4): TU, IG, SB_p, SB_n, ID and F1 = harmonic mean of TU and 100-ID.
- HalluRate (FREAK): share of answers falling back on the prior (the erased object, the
  original attribute), over the questions where a prior answer exists.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

TYPE_WEIGHTS: dict[str, float] = {"SA": 0.5, "MC": 0.25, "YN": 0.25}
TASK_WEIGHTS: dict[str, float] = {
    "relational_erasure": 0.3,
    "counterfactual_attribute": 0.2,
    "alteration_tracing": 0.2,
    "dense_counting": 0.3,
}
TASK_SHORT = {
    "relational_erasure": "RE",
    "counterfactual_attribute": "CA",
    "alteration_tracing": "AT",
    "dense_counting": "DC",
}
MODES = ("standard", "cot")

Row = Mapping[str, Any]


def pct(num: float, den: float) -> float | None:
    """A percentage rounded to 4 decimals (stable across platforms); ``None`` for an empty denominator."""
    return None if den == 0 else round(100.0 * num / den, 4)


def collapse_cyclic(rows: Iterable[Row]) -> list[dict[str, Any]]:
    """Merge the rotations of each cyclic MC question into one row, correct only when all are.

    Rotations share (mode, edit_id, question_set, qid, image_role); a question with a single
    row (rotation 0 or null) passes through unchanged.
    """
    groups: dict[tuple, list[Row]] = defaultdict(list)
    out: list[dict[str, Any]] = []
    for r in rows:
        if r.get("qtype") == "MC" and r.get("rotation") is not None:
            key = (r.get("mode"), r.get("edit_id"), r.get("question_set"), r.get("qid"), r.get("image_role"), r.get("task"))
            groups[key].append(r)
        else:
            out.append(dict(r))
    for key in sorted(groups, key=lambda k: tuple("" if v is None else str(v) for v in k)):
        members = sorted(groups[key], key=lambda r: r.get("rotation") or 0)
        merged = dict(members[0])
        merged["correct"] = all(bool(m.get("correct")) for m in members)
        priors = [m.get("prior_fallback") for m in members if m.get("prior_fallback") is not None]
        merged["prior_fallback"] = any(priors) if priors else None
        merged["rotations"] = len(members)
        out.append(merged)
    return out


def accuracy(rows: Iterable[Row], by: Sequence[str]) -> list[dict[str, Any]]:
    """Accuracy per group of ``by`` columns: rows ``{**group, n, correct, accuracy}`` sorted by group."""
    return [{**g, "n": n, "correct": c, "accuracy": pct(c, n)} for g, n, c in _group_counts(rows, by, lambda r: bool(r.get("correct")))]


def _group_counts(rows: Iterable[Row], by: Sequence[str], hit: Callable[[Row], bool | None]) -> list[tuple[dict[str, Any], int, int]]:
    """(group, rows, hits) per group of ``by`` columns, in a stable order; rows where ``hit`` is None are left out."""
    counts: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        h = hit(r)
        if h is None:
            continue
        key = tuple(r.get(k) for k in by)
        counts[key][0] += 1
        counts[key][1] += 1 if h else 0
    order = sorted(counts, key=lambda k: tuple("" if v is None else str(v) for v in k))
    return [(dict(zip(by, key)), counts[key][0], counts[key][1]) for key in order]


def mode_score(type_acc: Mapping[str, float | None]) -> float | None:
    """S_t^m from per-type accuracies. A type with no questions is left out and the
    remaining weights renormalised (a build may lack a type); ``None`` when none exist."""
    present = {t: a for t, a in type_acc.items() if a is not None and t in TYPE_WEIGHTS}
    if not present:
        return None
    wsum = sum(TYPE_WEIGHTS[t] for t in present)
    return round(sum(TYPE_WEIGHTS[t] * a for t, a in present.items()) / wsum, 4)


@dataclass(frozen=True)
class ReactScore:
    per_mode: dict[str, dict[str, float | None]]  # task -> mode -> S_t^m
    per_task: dict[str, float | None]  # task -> S_t
    score: float | None  # R
    complete: bool  # every task and both modes present (else weights were renormalised)

    def as_dict(self) -> dict[str, Any]:
        return {"per_mode": self.per_mode, "per_task": self.per_task, "react_score": self.score, "complete": self.complete}


def react_score(rows: Iterable[Row]) -> ReactScore:
    """React-Score over the ``main`` question set (control and BEAF questions excluded)."""
    main = collapse_cyclic(r for r in rows if (r.get("question_set") or "main") == "main")
    acc = {(a["task"], a["mode"], a["qtype"]): a["accuracy"] for a in accuracy(main, ["task", "mode", "qtype"])}
    tasks = sorted({t for t, _, _ in acc}, key=lambda t: list(TASK_WEIGHTS).index(t) if t in TASK_WEIGHTS else 99)
    per_mode: dict[str, dict[str, float | None]] = {}
    per_task: dict[str, float | None] = {}
    complete = set(tasks) == set(TASK_WEIGHTS)
    for t in tasks:
        per_mode[t] = {}
        for m in MODES:
            per_mode[t][m] = mode_score({q: acc.get((t, m, q)) for q in TYPE_WEIGHTS})
        have = [s for s in per_mode[t].values() if s is not None]
        complete = complete and len(have) == len(MODES)
        per_task[t] = round(sum(have) / len(have), 4) if have else None
    weighted = {t: s for t, s in per_task.items() if s is not None and t in TASK_WEIGHTS}
    score = None
    if weighted:
        wsum = sum(TASK_WEIGHTS[t] for t in weighted)
        score = round(sum(TASK_WEIGHTS[t] * s for t, s in weighted.items()) / wsum, 4)
    return ReactScore(per_mode, per_task, score, complete)


@dataclass(frozen=True)
class BeafPair:
    """One BEAF question asked on the original and the edited image."""

    correct_original: bool
    correct_edited: bool
    related: bool  # the question is about the removed object


def beaf_metrics(pairs: Iterable[BeafPair]) -> dict[str, float | int | None]:
    """TU, IG, SB_p, SB_n over removed-object pairs; ID over the others; F1 of TU and 100-ID."""
    rel = list(pairs)
    related = [p for p in rel if p.related]
    other = [p for p in rel if not p.related]

    def count(items: list[BeafPair], o: bool, m: bool) -> int:
        return sum(1 for p in items if p.correct_original == o and p.correct_edited == m)

    n = len(related)
    tu = pct(count(related, True, True), n)
    ig = pct(count(related, False, False), n)
    sb_p = pct(count(related, True, False), n)
    sb_n = pct(count(related, False, True), n)
    idec = pct(count(other, True, False) + count(other, False, True), len(other))
    f1 = None
    if tu is not None and idec is not None:
        keep = 100.0 - idec
        f1 = 0.0 if tu == 0 or keep == 0 else round(2.0 / (1.0 / tu + 1.0 / keep), 4)
    return {"TU": tu, "IG": ig, "SB_p": sb_p, "SB_n": sb_n, "ID": idec, "F1": f1, "n_related": n, "n_other": len(other)}


def beaf_pairs(rows: Iterable[Row]) -> list[BeafPair]:
    """Pair BEAF answers asked on the original and the edited image of one edit.

    Rows of ``question_set == "beaf"`` carry ``image_role`` original|edited and
    ``beaf_related`` (the qa stage's ``dimension == "removed"``); the pair key is (mode,
    edit_id, qid), or the normalised text when qid is missing. Unpaired rows are ignored
    (they cannot show a change).
    """
    by_key: dict[tuple, dict[str, Row]] = defaultdict(dict)
    for r in rows:
        if r.get("question_set") != "beaf":
            continue
        key = (r.get("mode"), r.get("edit_id"), r.get("qid") or " ".join(str(r.get("text", "")).lower().split()))
        by_key[key][str(r.get("image_role"))] = r
    out = []
    for key in sorted(by_key, key=lambda k: tuple(str(v) for v in k)):
        pair = by_key[key]
        if "original" in pair and "edited" in pair:
            out.append(
                BeafPair(
                    bool(pair["original"].get("correct")),
                    bool(pair["edited"].get("correct")),
                    bool(pair["edited"].get("beaf_related")),
                )
            )
    return out


def hallu_rate(rows: Iterable[Row], by: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Share of answers that fall back on the prior, over rows where a prior exists
    (``prior_fallback`` not null), per group of ``by`` columns."""
    def fell_back(r: Row) -> bool | None:
        return None if r.get("prior_fallback") is None else bool(r["prior_fallback"])

    return [{**g, "n": n, "fallbacks": h, "hallu_rate": pct(h, n)} for g, n, h in _group_counts(rows, by, fell_back)]


def summarize(rows: Sequence[Row]) -> dict[str, Any]:
    """Every metric of one evaluated model, as a JSON-ready dict (what ``metrics.json`` holds)."""
    all_rows = list(rows)
    rows = [r for r in all_rows if r.get("status") != "error"]  # transport failures say nothing about the model
    main = collapse_cyclic(r for r in rows if (r.get("question_set") or "main") == "main")
    control = [r for r in rows if r.get("question_set") == "control"]
    out: dict[str, Any] = {
        "n_answers": len(all_rows),
        "n_main_questions_scored": len(main),
        "unparseable": sum(1 for r in rows if r.get("status") == "unparseable"),
        "errors": sum(1 for r in all_rows if r.get("status") == "error"),
        "react": react_score(rows).as_dict(),
        "accuracy": {
            "overall": accuracy(main, ["mode"]),
            "task": accuracy(main, ["task", "mode"]),
            "type": accuracy(main, ["task", "qtype", "mode"]),
            "dimension": accuracy(main, ["task", "dimension", "mode"]),
            "qid": accuracy(main, ["task", "qid", "mode"]),
            "editor": accuracy(main, ["editor", "task", "mode"]),
            "variant": accuracy(main, ["variant", "task", "mode"]),
            "control": accuracy(control, ["task", "mode"]),
        },
        "hallu_rate": {
            "task": hallu_rate(main, ["task", "mode"]),
            "qid": hallu_rate(main, ["task", "qid", "mode"]),
        },
    }
    beaf_rows = [r for r in rows if r.get("question_set") == "beaf"]
    out["beaf"] = {m: beaf_metrics(beaf_pairs(r for r in beaf_rows if r.get("mode") == m)) for m in MODES if any(r.get("mode") == m for r in beaf_rows)}
    return out

"""Benchmark metrics, all in percent (0-100), computed from scored answer rows.

An answer row (see ``tasks.release.evaluate.schemas.ANSWERS``) needs: ``task``, ``mode``, ``qtype``,
``qid``, ``dimension``, ``question_set``, ``correct`` and, where relevant, ``edit_id``,
``editor``, ``variant``, ``rotation``, ``image_role``, ``text``, ``parsed``, ``gold``,
``beaf_related``, ``prior_fallback``. docs/eval.md describes every figure and its source.

- Accuracy per any grouping (task / type / dimension / qid / editor / mode).
- React-Score (SPEC section 9): S_t^m = 0.5 A_SA + 0.25 A_MC + 0.25 A_YN, S_t the mean over
  standard and CoT, R = sum_t w_t S_t / sum_t w_t over the tasks the benchmark holds, on the
  ``main`` set of the *targeted* items (the control variant is the cause-isolation ablation,
  :mod:`ablation`). The task weights w_t are a parameter (each task's ``TaskSpec.weight``,
  passed in by the caller; a release writes them into a table beside this file), so this
  module knows no task: the four built-in tasks weigh 0.3 RE, 0.2 CA, 0.2 AT, 0.3 DC (sum 1,
  so R is their plain weighted sum); a further task adds its own weight and every weight is
  divided by the new sum (a fifth task of weight 0.2 gives 0.25 / 0.1667 / 0.1667 / 0.25 /
  0.1667), and a task that holds no scored questions drops out the same way (``complete`` false).
- Cyclic MC (FREAK App. C.1.2): the presentations of one MC question count as one question;
  its averaged accuracy is the share of presentations answered right (what A_MC uses), its
  consistency accuracy 1 only when every presentation is right.
- BEAF (papers/beaf.txt eqs. 1-4, Tables 2-3): TU, IG, SB_p, SB_n, ID, F1 of TU and 100-ID,
  yes-ratios on the removed object before and after, and the traditional accuracy /
  precision / recall / F1 over every BEAF answer.
- HalluRate (FREAK): share of answers falling back on the prior (the erased object, the
  original attribute), over the questions where a prior answer exists; for cyclic MC the
  share of a question's presentations that picked the recorded prior option.

Nothing is rounded before a derived figure is computed: rounding (4 decimals) happens once,
on output.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

TYPE_WEIGHTS: dict[str, float] = {"SA": 0.5, "MC": 0.25, "YN": 0.25}
MODES = ("standard", "cot")
TARGETED = "targeted"
CONTROL = "control"

Row = Mapping[str, Any]


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def ratio(num: float, den: float) -> float | None:
    """An unrounded percentage; ``None`` for an empty denominator."""
    return None if den == 0 else 100.0 * num / den


def pct(num: float, den: float) -> float | None:
    """A percentage rounded to 4 decimals (stable across platforms); ``None`` for an empty denominator."""
    return _round(ratio(num, den))


def is_targeted(r: Row) -> bool:
    """Rows of the targeted variant (rows without a variant count as targeted)."""
    return (r.get("variant") or TARGETED) != CONTROL


def collapse_cyclic(rows: Iterable[Row]) -> list[dict[str, Any]]:
    """Merge the presentations of each cyclic MC question into one row.

    Presentations share (mode, edit_id, question_set, qid, image_role, task); a question with
    a single row (rotation 0 or null) passes through unchanged. The merged row carries
    ``correct`` (consistency: every presentation right), ``credit`` (averaged accuracy: the
    share right), ``rotations``, and for HalluRate ``prior_fallback`` (any presentation picked
    the prior), ``prior_share`` (the share that did) and ``prior_hits``.
    """
    groups: dict[tuple, list[Row]] = defaultdict(list)
    out: list[dict[str, Any]] = []
    for r in rows:
        if r.get("qtype") == "MC" and r.get("rotation") is not None:
            key = (
                r.get("mode"),
                r.get("edit_id"),
                r.get("question_set"),
                r.get("qid"),
                r.get("image_role"),
                r.get("task"),
            )
            groups[key].append(r)
        else:
            out.append(dict(r))
    for key in sorted(groups, key=lambda k: tuple("" if v is None else str(v) for v in k)):
        members = sorted(groups[key], key=lambda r: r.get("rotation") or 0)
        merged = dict(members[0])
        merged["correct"] = all(bool(m.get("correct")) for m in members)
        merged["credit"] = sum(1 for m in members if m.get("correct")) / len(members)
        priors = [bool(m["prior_fallback"]) for m in members if m.get("prior_fallback") is not None]
        merged["prior_fallback"] = any(priors) if priors else None
        merged["prior_share"] = sum(priors) / len(priors) if priors else None
        merged["prior_hits"] = sum(priors)
        merged["prior_presentations"] = len(priors)
        merged["rotations"] = len(members)
        out.append(merged)
    return out


def credit(r: Row) -> float:
    """A question's score: the averaged accuracy of a merged cyclic question, else 0 or 1."""
    c = r.get("credit")
    return float(c) if c is not None else (1.0 if r.get("correct") else 0.0)


def _group(
    rows: Iterable[Row], by: Sequence[str], value: Callable[[Row], float | None]
) -> list[tuple[dict[str, Any], int, float]]:
    """(group, rows, sum of values) per group of ``by`` columns, in a stable order; rows whose
    value is None are left out."""
    counts: dict[tuple, list[float]] = defaultdict(lambda: [0, 0.0])
    for r in rows:
        v = value(r)
        if v is None:
            continue
        key = tuple(r.get(k) for k in by)
        counts[key][0] += 1
        counts[key][1] += float(v)
    order = sorted(counts, key=lambda k: tuple("" if v is None else str(v) for v in k))
    return [(dict(zip(by, key)), int(counts[key][0]), counts[key][1]) for key in order]


def accuracy(rows: Iterable[Row], by: Sequence[str]) -> list[dict[str, Any]]:
    """Accuracy per group of ``by`` columns: rows ``{**group, n, correct, accuracy}`` sorted by
    group; a merged cyclic question counts as right only when every presentation is."""
    return [
        {**g, "n": n, "correct": int(c), "accuracy": pct(c, n)}
        for g, n, c in _group(rows, by, lambda r: 1.0 if r.get("correct") else 0.0)
    ]


def mc_cyclic(rows: Iterable[Row], by: Sequence[str]) -> list[dict[str, Any]]:
    """FREAK's two MC figures per group, over merged cyclic questions: averaged accuracy and
    consistency accuracy, with the number of questions and presentations."""
    mc = [r for r in rows if r.get("qtype") == "MC"]
    avg = {tuple(g.items()): (n, c) for g, n, c in _group(mc, by, credit)}
    cons = {tuple(g.items()): c for g, _, c in _group(mc, by, lambda r: 1.0 if r.get("correct") else 0.0)}
    pres = {tuple(g.items()): c for g, _, c in _group(mc, by, lambda r: float(r.get("rotations") or 1))}
    return [
        {
            **dict(k),
            "n": n,
            "presentations": int(pres[k]),
            "averaged_accuracy": pct(c, n),
            "consistency_accuracy": pct(cons[k], n),
        }
        for k, (n, c) in avg.items()
    ]


def mode_score(type_acc: Mapping[str, float | None]) -> float | None:
    """S_t^m from per-type accuracies. A type with no questions is left out and the
    remaining weights renormalised (then ``complete`` is false); ``None`` when none exist."""
    present = {t: a for t, a in type_acc.items() if a is not None and t in TYPE_WEIGHTS}
    if not present:
        return None
    wsum = sum(TYPE_WEIGHTS[t] for t in present)
    return sum(TYPE_WEIGHTS[t] * a for t, a in present.items()) / wsum


@dataclass(frozen=True)
class ReactScore:
    per_mode: dict[str, dict[str, float | None]]  # task -> mode -> S_t^m
    per_task: dict[str, float | None]  # task -> S_t
    score: float | None  # R
    complete: bool  # every task, both modes and every question type present (else weights were renormalised)
    missing: list[str]  # what was missing ("<task>/cot/SA", "<task>")

    def as_dict(self) -> dict[str, Any]:
        return {
            "per_mode": self.per_mode,
            "per_task": self.per_task,
            "react_score": self.score,
            "complete": self.complete,
            "missing": self.missing,
        }


def task_rank(weights: Mapping[str, float]) -> Callable[[str], tuple[int, str]]:
    """Sort key of task ids: the order of ``weights`` (benchmark order), other tasks after, by id."""
    order = {t: i for i, t in enumerate(weights)}
    return lambda t: (order.get(t, len(order)), t)


def react_score(rows: Iterable[Row], weights: Mapping[str, float] | None = None) -> ReactScore:
    """React-Score over the ``main`` question set of the rows given (control and BEAF
    questions excluded; callers pick the variant and editor).

    ``weights``: task id -> weight, in benchmark order, for every task the benchmark holds (a
    task listed without scored rows is ``missing``; a task with rows but no weight gets S_t and
    no share of R). ``None`` weighs every task present equally. The weights are renormalised
    over the tasks that have a score."""
    main = collapse_cyclic(r for r in rows if (r.get("question_set") or "main") == "main")
    acc = {
        (g["task"], g["mode"], g["qtype"]): ratio(c, n) for g, n, c in _group(main, ["task", "mode", "qtype"], credit)
    }
    present = {t for t, _, _ in acc}
    if weights is None:
        weights = {t: 1.0 for t in sorted(present, key=str)}
    tasks = sorted(present, key=task_rank(weights))
    per_mode: dict[str, dict[str, float | None]] = {}
    raw_task: dict[str, float | None] = {}
    missing = [t for t in weights if t not in present]
    for t in tasks:
        per_mode[t] = {}
        for m in MODES:
            types = {q: acc.get((t, m, q)) for q in TYPE_WEIGHTS}
            per_mode[t][m] = mode_score(types)
            if per_mode[t][m] is None:
                missing.append(f"{t}/{m}")
            else:
                missing += [f"{t}/{m}/{q}" for q, a in types.items() if a is None]
        have = [s for s in per_mode[t].values() if s is not None]
        raw_task[t] = sum(have) / len(have) if have else None
    weighted = {t: s for t, s in raw_task.items() if s is not None and t in weights}
    score = None
    wsum = sum(weights[t] for t in weighted)
    if weighted and wsum > 0:
        score = sum(weights[t] * s for t, s in weighted.items()) / wsum
    return ReactScore(
        {t: {m: _round(v) for m, v in d.items()} for t, d in per_mode.items()},
        {t: _round(v) for t, v in raw_task.items()},
        _round(score),
        not missing,
        missing,
    )


@dataclass(frozen=True)
class BeafPair:
    """One BEAF question asked on the original and the edited image."""

    correct_original: bool
    correct_edited: bool
    related: bool  # the question is about the removed object


def beaf_metrics(pairs: Iterable[BeafPair]) -> dict[str, float | int | None]:
    """TU, IG, SB_p, SB_n over removed-object pairs; ID over the others; F1 of TU and 100-ID
    (from the unrounded TU and ID)."""
    rel = list(pairs)
    related = [p for p in rel if p.related]
    other = [p for p in rel if not p.related]

    def count(items: list[BeafPair], o: bool, m: bool) -> int:
        return sum(1 for p in items if p.correct_original == o and p.correct_edited == m)

    n = len(related)
    tu = ratio(count(related, True, True), n)
    idec = ratio(count(other, True, False) + count(other, False, True), len(other))
    f1 = None
    if tu is not None and idec is not None:
        keep = 100.0 - idec
        f1 = 0.0 if tu == 0 or keep == 0 else 2.0 / (1.0 / tu + 1.0 / keep)
    return {
        "TU": _round(tu),
        "IG": pct(count(related, False, False), n),
        "SB_p": pct(count(related, True, False), n),
        "SB_n": pct(count(related, False, True), n),
        "ID": _round(idec),
        "F1": _round(f1),
        "n_related": n,
        "n_other": len(other),
    }


def beaf_traditional(rows: Iterable[Row]) -> dict[str, float | int | None]:
    """BEAF's Tables 2-3 companions over BEAF answers (``parsed`` and ``gold`` Yes/No): the
    yes-ratio on removed-object questions on the original and on the edited image, and the
    traditional accuracy / precision / recall / F1 (positive = "Yes") and yes-ratio over every
    BEAF answer of both images, changes ignored. An unreadable answer counts as not "Yes"."""
    beaf = [r for r in rows if r.get("question_set") == "beaf"]

    def yes(r: Row) -> bool:
        return str(r.get("parsed") or "").strip().lower() == "yes"

    def gold_yes(r: Row) -> bool:
        return str(r.get("gold") or "").strip().lower() == "yes"

    removed = [r for r in beaf if r.get("beaf_related")]
    before = [r for r in removed if r.get("image_role") == "original"]
    after = [r for r in removed if r.get("image_role") == "edited"]
    tp = sum(1 for r in beaf if yes(r) and gold_yes(r))
    fp = sum(1 for r in beaf if yes(r) and not gold_yes(r))
    fn = sum(1 for r in beaf if not yes(r) and gold_yes(r))
    right = sum(1 for r in beaf if bool(r.get("correct")))
    precision = ratio(tp, tp + fp)
    recall = ratio(tp, tp + fn)
    f1 = (
        None
        if precision is None or recall is None
        else (0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall))
    )
    return {
        "yes_ratio_before": pct(sum(1 for r in before if yes(r)), len(before)),
        "yes_ratio_after": pct(sum(1 for r in after if yes(r)), len(after)),
        "accuracy": pct(right, len(beaf)),
        "precision": _round(precision),
        "recall": _round(recall),
        "F1": _round(f1),
        "yes_ratio": pct(sum(1 for r in beaf if yes(r)), len(beaf)),
        "n": len(beaf),
    }


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
    """Share of answers that fall back on the prior, per group of ``by`` columns.

    The denominator ``n`` counts the questions where a prior answer exists (``prior_fallback``
    not null), each once; a merged cyclic question contributes the share of its presentations
    that picked the prior (``prior_share``), so 4 presentations with the prior picked once
    give 25. ``fallbacks`` counts the presentations that fell back.
    """
    groups: dict[tuple, list[float]] = defaultdict(lambda: [0, 0.0, 0])
    for r in rows:
        if r.get("prior_fallback") is None:
            continue
        g = groups[tuple(r.get(k) for k in by)]
        share = r.get("prior_share")
        g[0] += 1
        g[1] += float(share) if share is not None else (1.0 if r["prior_fallback"] else 0.0)
        g[2] += int(r.get("prior_hits", 1 if r["prior_fallback"] else 0))
    order = sorted(groups, key=lambda k: tuple("" if v is None else str(v) for v in k))
    return [
        {
            **dict(zip(by, k)),
            "n": int(groups[k][0]),
            "fallbacks": groups[k][2],
            "hallu_rate": pct(groups[k][1], groups[k][0]),
        }
        for k in order
    ]


def scored(rows: Sequence[Row]) -> list[Row]:
    """Rows that say something about the model (transport failures are left out)."""
    return [r for r in rows if r.get("status") != "error"]


def headline(rows: Sequence[Row], weights: Mapping[str, float] | None = None) -> dict[str, Any]:
    """React-Score (``weights`` as for :func:`react_score`), accuracies, FREAK's MC figures and
    HalluRate of one set of rows."""
    main = collapse_cyclic(r for r in rows if (r.get("question_set") or "main") == "main")
    return {
        "n_main_questions_scored": len(main),
        "react": react_score(rows, weights).as_dict(),
        "mc_cyclic": {"task": mc_cyclic(main, ["task", "mode"]), "qid": mc_cyclic(main, ["task", "qid", "mode"])},
        "hallu_rate": {"task": hallu_rate(main, ["task", "mode"]), "qid": hallu_rate(main, ["task", "qid", "mode"])},
    }


def beaf_summary(rows: Sequence[Row]) -> dict[str, Any]:
    """BEAF's change-aware metrics and yes-ratios (Table 2) plus the traditional ones (Table 3)."""
    trad = beaf_traditional(rows)
    return {
        **beaf_metrics(beaf_pairs(rows)),
        "yes_ratio_before": trad.pop("yes_ratio_before"),
        "yes_ratio_after": trad.pop("yes_ratio_after"),
        "traditional": trad,
    }


def by_editor(rows: Sequence[Row], weights: Mapping[str, float] | None = None) -> list[dict[str, Any]]:
    """The headline figures per (editor, variant)."""
    keys = sorted({(str(r.get("editor") or ""), str(r.get("variant") or TARGETED)) for r in rows})
    out = []
    for editor, variant in keys:
        mine = [
            r for r in rows if str(r.get("editor") or "") == editor and str(r.get("variant") or TARGETED) == variant
        ]
        out.append({"editor": editor, "variant": variant, **headline(mine, weights)})
    return out

"""Trivial baselines: what a model that never looks scores by answering one thing every time.

Per task x question set x type x dimension: always "Yes", always "No", each fixed letter, the
uniform random guess (expected), and the most frequent short answer; then each such model's
React-Score through ``tasks.release.metrics.react_score`` (the one formula), fed one row per
task, mode and type whose ``credit`` is the model's accuracy there. Accuracies are fractions
(0-1); React-Score is in percent, as in ``metrics.json``.

Short answers count as right only when equal to the gold after normalising (a judge may accept
more, so the SA figures are a lower bound; a constant answer rarely paraphrases a varying gold).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from storage.task_spec import all_tasks
from tasks.release.health.answers import normalised_gold
from tasks.release.health.questions import main_targeted
from tasks.release.metrics import MODES, react_score

GROUP = ("task", "question_set", "qtype", "dimension")
LETTERS = "ABCDEFGH"


def gold_counts(questions: pa.Table, by: tuple[str, ...]) -> dict[tuple, dict[str, int]]:
    """Per group of ``by`` columns: normalised gold -> rows (one columnar group-by)."""
    t = pa.table({**{c: questions.column(c) for c in by}, "g": normalised_gold(questions)})
    counted = t.group_by([*by, "g"]).aggregate([([], "count_all")])
    out: dict[tuple, dict[str, int]] = defaultdict(dict)
    cols = [counted.column(c).to_pylist() for c in by]
    for i, (g, n) in enumerate(zip(counted.column("g").to_pylist(), counted.column("count_all").to_pylist())):
        out[tuple(col[i] for col in cols)][g] = int(n)
    return dict(out)


def uniform_expected(questions: pa.Table, by: tuple[str, ...]) -> dict[tuple, float]:
    """Per group: the expected accuracy of a uniform random guess (1/2 for YN, 1/options for MC;
    SA has no finite answer set, so 0)."""
    k = pc.list_value_length(questions.column("options"))
    qtype = questions.column("qtype")
    chance = pc.if_else(
        pc.equal(qtype, "YN"),
        0.5,
        pc.if_else(pc.and_(pc.equal(qtype, "MC"), pc.greater(k, 0)), pc.divide(1.0, pc.cast(k, pa.float64())), 0.0),
    )
    t = pa.table({**{c: questions.column(c) for c in by}, "p": pc.fill_null(chance, 0.0)})
    agg = t.group_by(list(by)).aggregate([("p", "mean")])
    cols = [agg.column(c).to_pylist() for c in by]
    return {tuple(col[i] for col in cols): float(p) for i, p in enumerate(agg.column("p_mean").to_pylist())}


def baselines(qtype: str, golds: Mapping[str, int], uniform: float) -> dict[str, Any]:
    """Every trivial model's accuracy on one group, given its gold counts."""
    n = sum(golds.values())
    out: dict[str, Any] = {"n": n, "uniform": round(uniform, 4)}
    if not n:
        return out
    if qtype == "YN":
        out["always_yes"] = round(golds.get("yes", 0) / n, 4)
        out["always_no"] = round(golds.get("no", 0) / n, 4)
        out["yes_ratio"] = out["always_yes"]
    elif qtype == "MC":
        out["letters"] = {k: golds.get(k, 0) for k in LETTERS if golds.get(k, 0) or k in "ABCD"}
        out.update({f"always_{k}": round(v / n, 4) for k, v in out["letters"].items()})
    else:
        answer, count = max(golds.items(), key=lambda kv: (kv[1], kv[0]))
        out["most_frequent_answer"] = answer
        out["most_frequent"] = round(count / n, 4)
    constants = {k: v for k, v in out.items() if k.startswith("always_") or k == "most_frequent"}
    out["best_constant"] = max(constants.values(), default=0.0)
    named = {**constants, "uniform": out["uniform"]}
    best = max(named.items(), key=lambda kv: (kv[1], kv[0] != "uniform", kv[0]))  # a tie goes to a fixed answer
    out["best"], out["best_accuracy"] = best
    return out


def _table(questions: pa.Table, by: tuple[str, ...]) -> dict[tuple, dict[str, Any]]:
    counts, uniform = gold_counts(questions, by), uniform_expected(questions, by)
    return {k: baselines(k[by.index("qtype")], counts[k], uniform.get(k, 0.0)) for k in sorted(counts, key=str)}


def trivial_figures(questions: pa.Table) -> dict[str, Any]:
    """The trivial-baseline section of the health figures."""
    groups = [dict(zip(GROUP, k), **v) for k, v in _table(questions, GROUP).items()]
    per = _table(main_targeted(questions), ("task", "qtype"))
    per_task_type: dict[str, dict[str, Any]] = defaultdict(dict)
    for (task, qtype), v in per.items():
        per_task_type[task][qtype] = v
    return {
        "groups": groups,
        "per_task_type": dict(per_task_type),
        "react_score": trivial_react_scores(per_task_type),
    }


def _models(per_task_type: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> dict[str, dict[tuple[str, str], float]]:
    """Each trivial model's accuracy per (task, type); a type it cannot answer scores 0."""
    models: dict[str, dict[tuple[str, str], float]] = defaultdict(dict)
    for task, types in per_task_type.items():
        for qtype, v in types.items():
            names = [k for k in v if k.startswith("always_")] + ["uniform", "most_frequent"]
            for name in names:
                models[name][(task, qtype)] = float(v.get(name) or 0.0)
            models["best_constant"][(task, qtype)] = float(v.get("best_constant") or 0.0)
    every = {(t, q) for t, types in per_task_type.items() for q in types}
    return {m: {key: acc.get(key, 0.0) for key in every} for m, acc in models.items()}


def trivial_react_scores(per_task_type: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> dict[str, float | None]:
    """React-Score (percent) of each trivial model; ``best_constant`` answers each task and type
    with its best constant (a model that knows only the answer statistics of each task)."""
    specs = all_tasks()
    weights = {t: specs[t].weight for t in specs if t in per_task_type}
    out = {}
    for model, acc in sorted(_models(per_task_type).items()):
        rows = [
            {"task": t, "mode": m, "qtype": q, "question_set": "main", "credit": a}
            for (t, q), a in acc.items()
            for m in MODES
        ]
        out[model] = react_score(rows, weights or None).score
    return out

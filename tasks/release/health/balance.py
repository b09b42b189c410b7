"""Answer balance: the gold yes-ratio, the gold-letter distribution with a chi-square test
against uniform, short-answer entropy, and whether option length or position gives the gold away.

MC figures use each question's first presentation only: cyclic rotations spread every gold over
all letters by construction and would hide a skew of the questions themselves.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tasks.release.health.answers import normalised_gold
from tasks.release.health.questions import first_presentations
from tasks.release.health.trivial import LETTERS

ALL = "all"


def chi_square_sf(x: float, dof: int) -> float:
    """P(X >= x) for X chi-square with ``dof`` (integer) degrees of freedom, in closed form (the
    regularised upper gamma function at half-integer order): exact, and no scipy.stats import
    (seconds on a busy 2-core machine) for one number."""
    if x <= 0:
        return 1.0
    h = x / 2
    if dof % 2 == 0:
        term, total = 1.0, 1.0
        for i in range(1, dof // 2):
            term *= h / i
            total += term
        return min(1.0, math.exp(-h) * total)
    total, term = 0.0, math.sqrt(x) * math.exp(-h) * math.sqrt(2 / math.pi)
    for i in range(1, (dof + 1) // 2):
        total += term
        term *= x / (2 * i + 1)
    return min(1.0, math.erfc(math.sqrt(h)) + total)


def chi_square_uniform(observed: list[int], expected: list[float]) -> tuple[float, float | None]:
    """Pearson's chi-square statistic of ``observed`` against ``expected`` counts (rescaled to the
    same total) and its p-value (categories - 1 degrees of freedom); p is None with fewer than two."""
    keep = [(o, e) for o, e in zip(observed, expected) if e > 0]
    if len(keep) < 2:
        return 0.0, None
    scale = sum(o for o, _ in keep) / sum(e for _, e in keep)
    stat = sum((o - e * scale) ** 2 / (e * scale) for o, e in keep)
    return stat, chi_square_sf(stat, len(keep) - 1)


def entropy_bits(counts: list[int]) -> float:
    """Shannon entropy (bits) of a distribution given as counts."""
    n = sum(counts)
    return -sum(c / n * math.log2(c / n) for c in counts if c) if n else 0.0


def _predicts(hits: int, n: int, chance: float) -> dict[str, Any]:
    """A rule's accuracy beside chance; it predicts the gold when above chance by two standard errors."""
    if not n:
        return {"n": 0}
    acc = hits / n
    se = math.sqrt(max(chance * (1 - chance), 1e-12) / n)
    return {"n": n, "accuracy": round(acc, 4), "chance": round(chance, 4), "predicts": acc > chance + 2 * se}


def letter_figures(mc: pa.Table) -> dict[str, Any]:
    """Per task and over all: gold-letter counts, chi-square against uniform, and the option
    length / position rules (pick the longest, the shortest, the most frequent letter)."""
    tasks = mc.column("task").to_pylist()
    golds = normalised_gold(mc).to_pylist()
    options = mc.column("options").to_pylist()
    by: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"letters": Counter(), "exp": Counter(), "long": 0, "short": 0, "chance": 0.0, "n": 0}
    )
    for task, gold, opts in zip(tasks, golds, options):
        opts = list(opts or ())
        if not opts:
            continue
        lengths = [len(o) for o in opts]
        longest, shortest = lengths.index(max(lengths)), lengths.index(min(lengths))
        for key in (task, ALL):
            f = by[key]
            f["n"] += 1
            f["letters"][gold] += 1
            for i in range(len(opts)):
                f["exp"][LETTERS[i]] += 1 / len(opts)
            f["long"] += gold == LETTERS[longest]
            f["short"] += gold == LETTERS[shortest]
            f["chance"] += 1 / len(opts)
    out = {}
    for key, f in sorted(by.items()):
        letters = sorted(set(f["exp"]) | set(f["letters"]))
        stat, p = chi_square_uniform([f["letters"][x] for x in letters], [f["exp"][x] for x in letters])
        chance = f["chance"] / f["n"]
        top, top_n = max(f["letters"].items(), key=lambda kv: (kv[1], kv[0]))
        out[key] = {
            "letters": {x: f["letters"][x] for x in letters},
            "chi2": round(stat, 4),
            "p": None if p is None else round(p, 6),
            "longest_option": _predicts(f["long"], f["n"], chance),
            "shortest_option": _predicts(f["short"], f["n"], chance),
            "position": {**_predicts(top_n, f["n"], chance), "letter": top},
        }
    return out


def balance_figures(questions: pa.Table) -> dict[str, Any]:
    """The balance section of the health figures."""
    qtype = questions.column("qtype")
    yn = questions.filter(pc.equal(qtype, "YN"))
    yes = pc.equal(normalised_gold(yn), "yes")
    t = pa.table({"task": yn.column("task"), "set": yn.column("question_set"), "yes": yes})
    yes_ratio: dict[str, Any] = {}
    for key in (["task"], ["task", "set"]):
        agg = t.group_by(key).aggregate([("yes", "sum"), ([], "count_all")])
        for row in agg.to_pylist():
            yes_ratio["/".join(row[k] for k in key)] = round(row["yes_sum"] / row["count_all"], 4)
    yes_ratio[ALL] = round(pc.sum(yes).as_py() / yn.num_rows, 4) if yn.num_rows else None
    sa = questions.filter(pc.equal(qtype, "SA"))
    entropy = {}
    for task, counts in _gold_counts_by_task(sa).items():
        entropy[task] = {
            "bits": round(entropy_bits(list(counts.values())), 4),
            "distinct": len(counts),
            "n": sum(counts.values()),
        }
    mc = first_presentations(questions.filter(pc.equal(qtype, "MC")))
    letters = letter_figures(mc)
    return {
        "yes_ratio": dict(sorted(yes_ratio.items())),
        "mc": letters,
        "letter_p": letters.get(ALL, {}).get("p"),
        "sa_entropy": entropy,
    }


def _gold_counts_by_task(sa: pa.Table) -> dict[str, Counter]:
    t = pa.table({"task": sa.column("task"), "g": normalised_gold(sa)})
    agg = t.group_by(["task", "g"]).aggregate([([], "count_all")])
    out: dict[str, Counter] = defaultdict(Counter)
    for task, g, n in zip(*(agg.column(c).to_pylist() for c in ("task", "g", "count_all"))):
        out[task][g] = n
    return dict(out)

"""The blind prior baseline on the whole question table: accuracy on targeted vs control items,
and the targeted questions it answers right, which therefore do not probe the prior."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from prompts.blind_prior import PriorStats, blind_answer
from storage.task_spec import all_tasks
from tasks.release.health.answers import answer_matches, normalised_gold
from tasks.release.health.questions import MAIN, is_control
from tasks.release.metrics import MODES, react_score

LISTED = 200  # questions named in the figures (the HTML lists them; the count is always whole)


def blind_correct(questions: pa.Table, stats: PriorStats) -> list[bool]:
    """Per row: whether the blind prior model's answer equals the gold. One answer per distinct
    (type, text, options): the model reads nothing else, so equal questions get equal answers."""
    memo: dict[tuple, str] = {}
    qtypes = questions.column("qtype").to_pylist()
    texts = questions.column("text").to_pylist()
    options = questions.column("options").to_pylist()
    golds = normalised_gold(questions).to_pylist()
    out = []
    for qtype, text, opts, gold in zip(qtypes, texts, options, golds):
        key = (qtype, text, tuple(opts or ()))
        answer = memo.get(key)
        if answer is None:
            answer = memo[key] = blind_answer(qtype, text, list(opts or ()), stats)
        out.append(answer_matches(qtype, answer, gold))
    return out


def blind_figures(questions: pa.Table, stats: PriorStats) -> dict[str, Any]:
    """The blind-prior section of the health figures (accuracies as fractions, React-Score in percent)."""
    correct = pa.array(blind_correct(questions, stats), pa.bool_())
    control = is_control(questions)
    beaf = pc.equal(questions.column("question_set"), "beaf")
    kind = pc.if_else(
        control,
        "control",
        pc.if_else(beaf, "beaf", pc.if_else(pc.equal(questions.column("question_set"), MAIN), "targeted", "other")),
    )
    t = pa.table({"task": questions.column("task"), "qtype": questions.column("qtype"), "kind": kind, "ok": correct})
    agg = t.group_by(["task", "qtype", "kind"]).aggregate([("ok", "sum"), ([], "count_all")])
    per_task: dict[str, dict[str, Any]] = defaultdict(dict)
    per_type: dict[tuple[str, str], float] = {}
    sums: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for task, qtype, k, ok, n in zip(
        *(agg.column(c).to_pylist() for c in ("task", "qtype", "kind", "ok_sum", "count_all"))
    ):
        sums[(task, k)][0] += int(ok or 0)
        sums[(task, k)][1] += int(n)
        if k == "targeted":
            per_type[(task, qtype)] = (ok or 0) / n
    for (task, k), (ok, n) in sorted(sums.items()):
        per_task[task][k] = round(ok / n, 4)
        per_task[task][f"n_{k}"] = n
    right = questions.filter(pc.and_(pc.equal(kind, "targeted"), correct))
    not_probing = {
        "count": right.num_rows,
        "share_of_targeted": round(
            right.num_rows / max(1, sum(n for (_, k), (_, n) in sums.items() if k == "targeted")), 4
        ),
        "per_task": {
            t: int(n)
            for t, n in zip(
                *(
                    right.group_by("task").aggregate([([], "count_all")]).column(c).to_pylist()
                    for c in ("task", "count_all")
                )
            )
        },
        "questions": right.select(["id", "task", "qid", "text", "gold"]).slice(0, LISTED).to_pylist(),
    }
    specs = all_tasks()
    tasks = {t for t, _ in per_type}
    rows = [
        {"task": t, "mode": m, "qtype": q, "question_set": "main", "credit": a}
        for (t, q), a in per_type.items()
        for m in MODES
    ]
    return {
        "per_task": dict(per_task),
        "per_task_type": {f"{t}/{q}": round(a, 4) for (t, q), a in sorted(per_type.items())},
        "react_score": react_score(rows, {t: specs[t].weight for t in specs if t in tasks} or None).score,
        "not_probing": not_probing,
    }

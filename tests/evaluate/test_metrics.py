"""Metrics against values computed by hand (see the comments for the arithmetic)."""

import pytest

from storage.task_spec import all_tasks
from tasks.release.evaluate.summary import summarize
from tasks.release.metrics import (
    BeafPair,
    accuracy,
    beaf_metrics,
    beaf_pairs,
    collapse_cyclic,
    hallu_rate,
    mode_score,
    react_score,
)

# The built-in tasks' React-Score weights (a task plugin installed beside them, such as
# examples/spatial_relation under `make test`, is not part of these hand-computed tables).
WEIGHTS = {t: spec.weight for t, spec in all_tasks().items() if spec.modules[0].startswith("tasks.builtin_tasks.")}


def _rows(task, mode, qtype, results):
    return [
        {
            "task": task,
            "mode": mode,
            "qtype": qtype,
            "qid": f"Q{i}",
            "question_set": "main",
            "correct": c,
            "edit_id": "e1",
        }
        for i, c in enumerate(results)
    ]


def hand_table():
    rows = []
    # RE standard: YN 1/2 = 50, MC 2/2 = 100, SA 0/2 = 0 -> 0.5*0 + 0.25*100 + 0.25*50 = 37.5
    rows += _rows("relational_erasure", "standard", "YN", [True, False])
    rows += _rows("relational_erasure", "standard", "MC", [True, True])
    rows += _rows("relational_erasure", "standard", "SA", [False, False])
    # RE cot: YN 100, MC 0, SA 50 -> 25 + 0 + 25 = 50 ; S_RE = (37.5 + 50) / 2 = 43.75
    rows += _rows("relational_erasure", "cot", "YN", [True])
    rows += _rows("relational_erasure", "cot", "MC", [False])
    rows += _rows("relational_erasure", "cot", "SA", [True, False])
    # CA: standard all right (100), cot all wrong (0) -> S_CA = 50
    for q in ("YN", "MC", "SA"):
        rows += _rows("counterfactual_attribute", "standard", q, [True])
        rows += _rows("counterfactual_attribute", "cot", q, [False])
    # AT: all right -> 100
    for m in ("standard", "cot"):
        for q in ("YN", "MC", "SA"):
            rows += _rows("alteration_tracing", m, q, [True, True])
    # DC: SA right, MC and YN wrong in both modes -> 50
    for m in ("standard", "cot"):
        rows += _rows("dense_counting", m, "SA", [True])
        rows += _rows("dense_counting", m, "MC", [False])
        rows += _rows("dense_counting", m, "YN", [False, False, False])
    # A control question never counts towards React-Score.
    rows.append(
        {
            "task": "dense_counting",
            "mode": "cot",
            "qtype": "SA",
            "qid": "C1",
            "question_set": "control",
            "correct": False,
        }
    )
    return rows


def test_react_score_by_hand():
    rs = react_score(hand_table(), WEIGHTS)
    assert rs.per_mode["relational_erasure"] == {"standard": 37.5, "cot": 50.0}
    assert rs.per_task == {
        "relational_erasure": 43.75,
        "counterfactual_attribute": 50.0,
        "alteration_tracing": 100.0,
        "dense_counting": 50.0,
    }
    # R = 0.3*43.75 + 0.2*50 + 0.2*100 + 0.3*50 = 13.125 + 10 + 20 + 15
    assert rs.score == pytest.approx(58.125)
    assert rs.complete


def test_react_score_partial_build_renormalises():
    rows = _rows("counterfactual_attribute", "standard", "YN", [True, False])  # only YN: S = 50
    rs = react_score(rows, WEIGHTS)
    assert rs.per_mode["counterfactual_attribute"] == {"standard": 50.0, "cot": None}
    assert rs.score == 50.0 and not rs.complete
    assert mode_score({"SA": None, "MC": None, "YN": None}) is None


def test_accuracy_groups():
    acc = accuracy(hand_table(), ["task", "mode"])
    re_std = next(a for a in acc if a["task"] == "relational_erasure" and a["mode"] == "standard")
    assert (re_std["n"], re_std["correct"], re_std["accuracy"]) == (6, 3, 50.0)
    by_qid = accuracy(_rows("x", "cot", "YN", [True, False, True]), ["qid"])
    assert [a["accuracy"] for a in by_qid] == [100.0, 0.0, 100.0]


def test_cyclic_mc_all_correct():
    base = {
        "task": "relational_erasure",
        "mode": "standard",
        "qtype": "MC",
        "qid": "Q9",
        "edit_id": "e",
        "question_set": "main",
    }
    rows = [dict(base, rotation=i, correct=c) for i, c in enumerate([True, True, False, True])]
    rows += [dict(base, qid="Q10", rotation=i, correct=True) for i in range(4)]
    merged = collapse_cyclic(rows)
    assert len(merged) == 2
    assert {m["qid"]: m["correct"] for m in merged} == {"Q9": False, "Q10": True}
    # plain accuracy would be 7/8; cyclic scoring gives 1/2
    assert accuracy(merged, ["qtype"])[0]["accuracy"] == 50.0


def test_beaf_by_hand():
    T, F = True, False
    related = [(T, T), (T, T), (T, F), (F, T), (F, F)]  # TU 2/5, IG 1/5, SB_p 1/5, SB_n 1/5
    other = [(T, T), (T, F), (F, F), (F, T)]  # changed correctness in 2 of 4 -> ID 50
    pairs = [BeafPair(o, m, True) for o, m in related] + [BeafPair(o, m, False) for o, m in other]
    got = beaf_metrics(pairs)
    assert got["TU"] == 40.0 and got["IG"] == 20.0 and got["SB_p"] == 20.0 and got["SB_n"] == 20.0
    assert got["TU"] + got["IG"] + got["SB_p"] + got["SB_n"] == 100.0
    assert got["ID"] == 50.0
    # F1 = 2 / (1/40 + 1/50) = 44.444...
    assert got["F1"] == pytest.approx(44.4444, abs=1e-4)


def test_beaf_pairs_from_rows():
    def r(role, qid, correct, related, mode="standard"):
        return {
            "question_set": "beaf",
            "mode": mode,
            "edit_id": "e1",
            "qid": qid,
            "image_role": role,
            "correct": correct,
            "beaf_related": related,
        }

    rows = [
        r("original", "B1", True, True),
        r("edited", "B1", False, True),
        r("original", "B2", True, False),
        r("edited", "B2", True, False),
        r("edited", "B3", True, False),  # unpaired: ignored
        r("original", "B1", False, True, mode="cot"),  # another mode: its own pair key, unpaired here
    ]
    pairs = beaf_pairs(rows)
    assert sorted(pairs, key=lambda p: p.related) == [BeafPair(True, True, False), BeafPair(True, False, True)]
    got = beaf_metrics(pairs)
    assert got["SB_p"] == 100.0 and got["ID"] == 0.0 and got["F1"] == 0.0


def test_hallu_rate():
    rows = [
        {"task": "t", "prior_fallback": True},
        {"task": "t", "prior_fallback": False},
        {"task": "t", "prior_fallback": True},
        {"task": "t", "prior_fallback": None},  # no prior defined: not counted
    ]
    got = hallu_rate(rows, ["task"])
    assert got == [{"task": "t", "n": 3, "fallbacks": 2, "hallu_rate": pytest.approx(66.6667)}]


def test_summarize_is_json_ready():
    import json

    s = summarize(hand_table())
    json.dumps(s)
    assert s["react"]["react_score"] == pytest.approx(58.125)
    assert s["accuracy"]["control"][0]["n"] == 1


def test_cyclic_keeps_missing_prior_missing():
    base = {
        "task": "alteration_tracing",
        "mode": "cot",
        "qtype": "MC",
        "qid": "Q10",
        "edit_id": "e",
        "rotation": 0,
        "correct": False,
        "prior_fallback": None,
    }
    assert collapse_cyclic([base])[0]["prior_fallback"] is None
    assert hallu_rate(collapse_cyclic([base]), ["task"]) == []
